package replication

import (
	"errors"
	"fmt"
	"slices"
)

// ErrLeaderChanged is returned by OnISRCommitted when the committed state
// has another leader or leader epoch: this Leader is finished and the node
// must drop it (and become a follower, or start a new Leader for the new
// epoch).
var ErrLeaderChanged = errors.New("partition leadership changed")

// ISRChange is an ISR proposal for the controller (an AlterPartition
// request). LeaderEpoch and PartitionEpoch are those of the committed state
// it was computed from, so the controller rejects it if that state is stale.
type ISRChange struct {
	NewISR         []int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

func (c ISRChange) clone() ISRChange {
	c.NewISR = slices.Clone(c.NewISR)
	return c
}

func (c ISRChange) equal(o ISRChange) bool {
	return c.LeaderEpoch == o.LeaderEpoch && c.PartitionEpoch == o.PartitionEpoch && slices.Equal(c.NewISR, o.NewISR)
}

// Tick decides whether to propose an ISR change at nowMs and returns it, or
// nil. The node calls it periodically (Kafka checks every half of
// replica.lag.time.max.ms) and after each follower fetch, then sends the
// proposal to the controller.
//
// At most one change is in flight: while one is pending Tick returns nil (use
// Pending to resend it). A shrink comes first: it removes every ISR follower
// that has not been caught up within replica.lag.time.max.ms. Otherwise an
// expansion adds every follower whose durable end has reached both the HW and
// the start of the current leader epoch and for which eligible returns true
// (nil means every replica is eligible). The node passes its metadata view
// there, so fenced or shutting-down brokers are not proposed (KIP-841; the
// controller would reject them with INELIGIBLE_REPLICA anyway).
//
// The leader is always in the proposed ISR: it is in the committed ISR, a
// shrink never removes it and an expansion only adds.
func (l *Leader) Tick(nowMs int64, eligible func(id int32) bool) *ISRChange {
	if l.pend != nil {
		return nil
	}
	newISR := l.shrunkISR(nowMs)
	if newISR == nil {
		newISR = l.expandedISR(eligible)
	}
	if newISR == nil {
		return nil
	}
	l.pend = &ISRChange{NewISR: newISR, LeaderEpoch: l.state.LeaderEpoch, PartitionEpoch: l.state.PartitionEpoch}
	l.resendBackoffMs = 0
	// The additions count towards the HW from now on, which can only hold it
	// back; a shrink changes nothing until committed. No HW move here.
	out := l.pend.clone()
	return &out
}

// shrunkISR returns the committed ISR without its out-of-sync followers, or
// nil when every member is in sync.
//
// It allocates only for a shrink: every follower fetch ticks, and almost
// every tick finds the ISR in sync.
func (l *Leader) shrunkISR(nowMs int64) []int32 {
	var out []int32
	for i, id := range l.state.ISR {
		if f := l.follower(id); f != nil && !l.caughtUp(f, nowMs) {
			if out == nil {
				out = make([]int32, i, len(l.state.ISR))
				copy(out, l.state.ISR[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, id)
		}
	}
	return out
}

// caughtUp is Kafka's ReplicaState.isCaughtUp: the follower holds the whole
// log, or did within replica.lag.time.max.ms. Note that a follower that
// caught up and then stopped fetching stays in sync while nothing is
// produced; dead brokers leave the ISR through controller fencing instead.
func (l *Leader) caughtUp(f *follower, nowMs int64) bool {
	return f.offset == l.logEnd || f.lastCaughtUpMs >= nowMs-l.cfg.ReplicaLagTimeMaxMs
}

// expandedISR returns the committed ISR plus every follower eligible to join,
// in replica order, or nil when none is.
func (l *Leader) expandedISR(eligible func(id int32) bool) []int32 {
	if len(l.state.ISR) == len(l.state.Replicas) {
		return nil // every replica is in (the ISR is a subset of the replicas)
	}
	var out []int32
	for _, id := range l.state.Replicas {
		f := l.follower(id)
		if f == nil || slices.Contains(l.state.ISR, id) || !l.canJoin(f) {
			continue
		}
		if eligible != nil && !eligible(id) {
			continue
		}
		if out == nil {
			out = slices.Clone(l.state.ISR)
		}
		out = append(out, id)
	}
	return out
}

// canJoin is Kafka's isFollowerInSync: the follower holds every committed
// record (its durable end reached the HW) and everything this leader had
// when its epoch began. The second rule (KAFKA-7128) matters because a new
// leader's HW can lag: records between its HW and its epoch start may have
// been committed by the previous leader, and a follower admitted without
// them could be elected next and lose them.
func (l *Leader) canJoin(f *follower) bool {
	return f.offset != unknownOffset && f.offset >= l.hw && f.offset >= l.epochStart
}

// Pending returns the ISR change in flight, if any, for resending after a
// lost request.
func (l *Leader) Pending() (ISRChange, bool) {
	if l.pend == nil {
		return ISRChange{}, false
	}
	return l.pend.clone(), true
}

// IsPending reports whether ch is still the proposal in flight: a resend
// of ch is due only then. Committed metadata (OnISRCommitted), a refusal
// or a new Leader for another epoch ends it.
func (l *Leader) IsPending(ch ISRChange) bool {
	return l.pend != nil && l.pend.equal(ch)
}

// OnISRChangeRejected handles the controller's error answer to proposal ch.
// An answer to an older proposal is ignored. The answer decides (see
// classifyISRAnswer):
//   - a refusal (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED, an invalid
//     request) clears the proposal so the next Tick may propose afresh;
//   - a refusal because this leader's view is stale (INVALID_UPDATE_VERSION,
//     FENCED_LEADER_EPOCH, unknown partition) keeps it pending, as in
//     Kafka's handleAlterPartitionError: newer metadata is on its way and
//     OnISRCommitted will clear it;
//   - an unknown outcome (no answer, NOT_CONTROLLER, STALE_BROKER_EPOCH, a
//     timeout) keeps it pending too: the controller may still commit it, so
//     its additions must keep bounding the HW. The caller resends it
//     (ISRChangeOutcomeUnknown tells).
//
// Dropping a proposed addition means the HW waits for fewer replicas, so it
// may advance; hwAdvanced reports that. It never goes back.
func (l *Leader) OnISRChangeRejected(ch ISRChange, err error) (hwAdvanced bool) {
	if !l.IsPending(ch) || classifyISRAnswer(err) != answerRefused {
		return false
	}
	l.pend = nil
	return l.maybeAdvanceHW()
}

// OnISRCommitted applies a partition state committed in metadata at nowMs:
// the answer to a proposal, a change the controller made itself (fencing a
// broker removes it from the ISR), or a reassignment. It reports whether the
// HW moved (a committed shrink may release it).
//
// A state with another leader or leader epoch returns ErrLeaderChanged: drop
// this Leader. A state older than the one held is ignored (metadata can be
// delivered twice). Any newer state clears the pending proposal: it was
// computed from an older partition epoch, so the controller has either
// committed it (it is in st) or will refuse it as stale.
func (l *Leader) OnISRCommitted(st State, nowMs int64) (hwAdvanced bool, err error) {
	if st.Leader != l.cfg.LocalID || st.LeaderEpoch != l.state.LeaderEpoch {
		return false, fmt.Errorf("leader %d epoch %d is now leader %d epoch %d: %w",
			l.cfg.LocalID, l.state.LeaderEpoch, st.Leader, st.LeaderEpoch, ErrLeaderChanged)
	}
	if err := st.validate(l.cfg.LocalID); err != nil {
		return false, fmt.Errorf("committed partition state: %w", err)
	}
	switch {
	case st.PartitionEpoch < l.state.PartitionEpoch:
		return false, nil
	case st.PartitionEpoch == l.state.PartitionEpoch:
		if !slices.Equal(st.ISR, l.state.ISR) || !slices.Equal(st.Replicas, l.state.Replicas) {
			return false, fmt.Errorf("partition epoch %d committed twice with different contents: isr %v replicas %v, then isr %v replicas %v",
				st.PartitionEpoch, l.state.ISR, l.state.Replicas, st.ISR, st.Replicas)
		}
		return false, nil
	}
	l.syncFollowers(st, nowMs)
	l.state = st.clone()
	l.pend = nil
	return l.maybeAdvanceHW(), nil
}

// syncFollowers adds state for new replicas and drops removed ones
// (reassignment), and gives followers that just joined the ISR a fresh
// caught-up time, as NewLeader does for the initial ISR: a follower the
// controller just admitted should not be shrunk out on the next Tick for
// having been behind before it joined.
func (l *Leader) syncFollowers(st State, nowMs int64) {
	next := make([]follower, 0, len(st.Replicas))
	for _, id := range st.Replicas {
		if id == l.cfg.LocalID {
			continue
		}
		f := newFollower(id)
		if old := l.follower(id); old != nil {
			f = *old
		}
		if slices.Contains(st.ISR, id) && !slices.Contains(l.state.ISR, id) {
			f.lastCaughtUpMs = max(f.lastCaughtUpMs, nowMs)
		}
		next = append(next, f)
	}
	l.followers = next
}
