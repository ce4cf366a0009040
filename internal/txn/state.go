package txn

import "github.com/twmb/franz-go/pkg/kmsg"

// State is a transaction's state, numbered as in Kafka's
// TransactionLogValue (kmsg.TransactionState).
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

// String is the state's name as Kafka's DescribeTransactions and
// ListTransactions answer it (and kafka-transactions prints it).
func (s State) String() string {
	return kmsg.TransactionState(s).String()
}

// ParseState is the inverse of String (ListTransactions' state filter).
func ParseState(name string) (State, bool) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// validPrevious lists, for every state, the states a transaction may move
// to it from (Kafka's TransactionState.validPreviousStates).
var validPrevious = map[State][]State{
	Empty:         {Empty, CompleteCommit, CompleteAbort},
	Ongoing:       {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit: {Ongoing},
	// Transaction version 2 aborts with nothing open too (Kafka 4.0).
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteCommit, CompleteAbort},
	PrepareEpochFence: {Ongoing},
}

// ValidTransition reports whether Kafka allows a transaction in from to
// move to to.
func ValidTransition(from, to State) bool {
	for _, s := range validPrevious[to] {
		if s == from {
			return true
		}
	}
	return false
}

// completed reports whether no transaction is in progress.
func (s State) completed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}
