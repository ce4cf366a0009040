package verify

import "slices"

// Kind is a kind of anomaly the checker looks for.
type Kind string

const (
	// Lost: acknowledged, and a later offset of its partition was read,
	// but the record itself was never read.
	Lost Kind = "lost"
	// Unseen: acknowledged but never read by the end, and nothing after
	// it was read either (it may only be late).
	Unseen Kind = "unseen"
	// Duplicated: one value at two or more offsets.
	Duplicated Kind = "duplicated"
	// InconsistentOffset: one offset holding two or more values (two reads
	// disagree, or with acks=all a read disagrees with the acknowledgement).
	InconsistentOffset Kind = "inconsistent-offset"
	// Reordered: a producer's values appear in a partition out of the
	// order it sent them.
	Reordered Kind = "reordered"
	// FailedButPresent: a send reported as definitely failed was read.
	FailedButPresent Kind = "failed-but-present"
	// PollSkip: a consumer's next read of a partition jumped over offsets.
	PollSkip Kind = "poll-skip"
	// NonMonotonicPoll: a consumer's next read of a partition was at or
	// before the offset it read last.
	NonMonotonicPoll Kind = "nonmonotonic-poll"
	// Phantom: a read value that no producer sent.
	Phantom Kind = "phantom"
	// GroupLost: acknowledged, and the group read a later offset of its
	// partition, but no member ever read the record itself.
	GroupLost Kind = "group-lost"
	// GroupUnseen: acknowledged, but no group member read it by the end,
	// nor anything after it.
	GroupUnseen Kind = "group-unseen"
	// GroupResumeSkip: a member given a partition started reading it past
	// the highest offset ever committed (or tried) for it, skipping
	// records no member had committed.
	GroupResumeSkip Kind = "group-resume-skip"
	// CommitRegressed: the coordinator accepted a commit below the one it
	// held for the partition, from the member that made that one, or from
	// a member given the partition after it was made (which resumed below
	// an accepted commit: the coordinator forgot it). A lower commit from a
	// member that had not yet heard its partition moved is allowed by the
	// classic protocol and counted in StaleCommits instead.
	CommitRegressed Kind = "commit-regressed"
)

// Anomalies of the txn workload (CheckTxn).
const (
	// TxnLost: a record of a committed transaction that a read_committed
	// consumer never read by the end.
	TxnLost Kind = "txn-lost"
	// TxnPartial: a transaction whose outcome is unknown, of which a
	// consumer read some records but not all.
	TxnPartial Kind = "txn-partial"
	// AbortedRead: a record of an aborted transaction (or of one never
	// asked to commit) delivered to a read_committed consumer.
	AbortedRead Kind = "aborted-read"
	// ReadTwice: one consumer read one value more than once.
	ReadTwice Kind = "read-twice"
)

// TxnKinds lists the kinds CheckTxn looks for, in report order.
var TxnKinds = []Kind{TxnLost, TxnPartial, AbortedRead, ReadTwice, Duplicated, InconsistentOffset, NonMonotonicPoll, Phantom}

// Kinds lists every anomaly kind in the order reports show them.
var Kinds = []Kind{Lost, Unseen, Duplicated, InconsistentOffset, Reordered, FailedButPresent, PollSkip, NonMonotonicPoll, Phantom,
	GroupLost, GroupUnseen, GroupResumeSkip, CommitRegressed}

// MaxExamples is how many examples of each kind a Result keeps; the count
// covers them all.
const MaxExamples = 5

// Anomaly is one example of a kind, with what locates it.
type Anomaly struct {
	Kind      Kind   `json:"kind"`
	Value     string `json:"value,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Consumer  int    `json:"consumer,omitempty"`
	Detail    string `json:"detail"`
}

// Result is what Check found.
type Result struct {
	// Valid is true when no anomaly of a kind the producer settings rule
	// out was found (see Tolerated).
	Valid bool `json:"valid"`

	Sent       int `json:"sent"`
	Acked      int `json:"acked"`
	Failed     int `json:"failed"`     // definite failures
	Indefinite int `json:"indefinite"` // failures whose outcome is unknown
	Reads      int `json:"reads"`      // read events
	ReadValues int `json:"read_values"`
	// IndefiniteButPresent counts sends reported failed with an unknown
	// outcome that were read after all: allowed, and worth knowing.
	IndefiniteButPresent int `json:"indefinite_but_present"`

	// Group consumption (zero without group members). GroupReads counts
	// read events by members; Redeliveries the reads of a value some
	// member had read before, which at-least-once delivery allows after a
	// rebalance or failure; Rebalances the assignment changes (assign and
	// revoke events); Commits and CommitsFailed the commits answered.
	GroupReads    int `json:"group_reads,omitempty"`
	Redeliveries  int `json:"redeliveries,omitempty"`
	Rebalances    int `json:"rebalances,omitempty"`
	Commits       int `json:"commits,omitempty"`
	CommitsFailed int `json:"commits_failed,omitempty"`
	// StaleCommits counts accepted commits that lowered a partition's
	// committed offset, made by a member whose partition had moved on
	// without it knowing yet (allowed; see CommitRegressed).
	StaleCommits int `json:"stale_commits,omitempty"`

	// FailureReasons counts failed sends by error text (the first
	// maxReasons distinct texts; later ones under "other").
	FailureReasons map[string]int `json:"failure_reasons,omitempty"`

	Counts   map[Kind]int       `json:"counts"`
	Examples map[Kind][]Anomaly `json:"examples"`
	// Tolerated lists kinds the producer settings allow (acks=1 may lose
	// acknowledged records; a non-idempotent producer may duplicate and
	// reorder on retry); they are reported but do not make a run invalid.
	Tolerated []Kind `json:"tolerated,omitempty"`

	// Transactions of the txn workload by outcome: committed (confirmed),
	// aborted (asked to abort, or never asked to commit) and unknown (a
	// commit that errored).
	TxnCommitted int `json:"txn_committed,omitempty"`
	TxnAborted   int `json:"txn_aborted,omitempty"`
	TxnUnknown   int `json:"txn_unknown,omitempty"`
	// TxnUnknownCommitted counts unknown transactions every consumer read
	// whole (the commit happened); the rest were read by none.
	TxnUnknownCommitted int `json:"txn_unknown_committed,omitempty"`
	// Chain counts the txn workload's consume-transform-produce chain
	// (nil without one).
	Chain *ChainStats `json:"chain,omitempty"`

	// kinds are the kinds the verdict lists (Kinds when nil).
	kinds []Kind
}

func newResult(m Meta) *Result {
	r := &Result{Counts: map[Kind]int{}, Examples: map[Kind][]Anomaly{}, FailureReasons: map[string]int{}}
	if m.Acks != AcksAll {
		r.Tolerated = append(r.Tolerated, Lost, Unseen, GroupLost, GroupUnseen)
	}
	if !m.Idempotent {
		r.Tolerated = append(r.Tolerated, Duplicated, Reordered, FailedButPresent)
	}
	return r
}

// add counts an anomaly and keeps it as an example while there is room.
func (r *Result) add(a Anomaly) {
	r.Counts[a.Kind]++
	if len(r.Examples[a.Kind]) < MaxExamples {
		r.Examples[a.Kind] = append(r.Examples[a.Kind], a)
	}
}

// maxReasons bounds the distinct failure texts a Result keeps.
const maxReasons = 20

func (r *Result) addFailure(reason string) {
	if _, ok := r.FailureReasons[reason]; !ok && len(r.FailureReasons) >= maxReasons {
		reason = "other"
	}
	r.FailureReasons[reason]++
}

// IsTolerated reports whether kind k is allowed by the run's settings.
func (r *Result) IsTolerated(k Kind) bool { return slices.Contains(r.Tolerated, k) }

// Anomalies is the number of anomalies that count against validity.
func (r *Result) Anomalies() int {
	n := 0
	for k, c := range r.Counts {
		if !r.IsTolerated(k) {
			n += c
		}
	}
	return n
}
