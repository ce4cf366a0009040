package replication

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/invariant"
)

// neverCaughtUp marks a follower the leader has not seen caught up in this
// leader epoch. Comparisons are written as lastCaughtUpMs >= nowMs-lag so
// the sentinel never takes part in a subtraction.
const neverCaughtUp = math.MinInt64

// unknownOffset is a follower position the leader has not heard yet (Kafka's
// UnifiedLog.UnknownOffset). It is below every real offset, so an ISR member
// the leader has not heard from holds the HW where it is.
const unknownOffset = -1

// Leader is the replication state of one partition this broker leads, for
// one leader epoch. It is not safe for concurrent use: the node calls it
// under the partition lock.
type Leader struct {
	cfg   Config
	state State      // as committed in metadata
	pend  *ISRChange // the one proposal in flight, if any
	// resendBackoffMs is the last wait before a resend of pend (OnISRAnswer);
	// 0 until its first unknown outcome.
	resendBackoffMs int64

	logEnd     int64
	durableEnd int64
	hw         int64
	epochStart int64
	// startMs is when this leader epoch began here: a quiet fetch (see
	// Quiet) from before it says nothing about this epoch's log.
	startMs int64

	// followers holds every replica except this broker, in replica
	// order: a slice, not a map, since every follower fetch of every
	// partition looks one up among at most a few.
	followers []follower
}

// follower is what the leader knows of one follower (Kafka's ReplicaState).
type follower struct {
	id int32
	// offset is the durable end the follower reported in its last fetch.
	offset int64
	// lastFetchMs and lastFetchLogEnd are the time of the last fetch and the
	// leader's log end offset at that time.
	lastFetchMs     int64
	lastFetchLogEnd int64
	// lastCaughtUpMs is the last time the follower was known to hold
	// everything the leader had.
	lastCaughtUpMs int64
}

// NewLeader starts leading a partition at nowMs. Follower positions are
// unknown until they fetch, so the HW stays at log.HighWatermark until every
// ISR member has reported; ISR followers count as caught up now so they are
// not removed before they had a chance to fetch (Kafka's resetReplicaState).
func NewLeader(cfg Config, st State, log LocalLog, nowMs int64) (*Leader, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new leader: config: %w", err)
	}
	if err := st.validate(cfg.LocalID); err != nil {
		return nil, fmt.Errorf("new leader: partition state: %w", err)
	}
	if err := log.validate(); err != nil {
		return nil, fmt.Errorf("new leader: local log: %w", err)
	}
	l := &Leader{
		cfg:        cfg,
		state:      st.clone(),
		logEnd:     log.LogEndOffset,
		durableEnd: log.DurableEnd,
		hw:         log.HighWatermark,
		epochStart: log.EpochStartOffset,
		startMs:    nowMs,
		followers:  make([]follower, 0, len(st.Replicas)),
	}
	for _, id := range st.Replicas {
		if id == cfg.LocalID {
			continue
		}
		f := newFollower(id)
		if slices.Contains(st.ISR, id) {
			f.lastCaughtUpMs = nowMs
		}
		l.followers = append(l.followers, f)
	}
	// A single-member ISR needs nobody else: the HW is the local durable end.
	l.maybeAdvanceHW()
	return l, nil
}

func newFollower(id int32) follower {
	return follower{id: id, offset: unknownOffset, lastFetchLogEnd: unknownOffset, lastCaughtUpMs: neverCaughtUp}
}

// follower is the state of follower id, or nil when id is not one. The
// pointer is valid until the next syncFollowers.
func (l *Leader) follower(id int32) *follower {
	for i := range l.followers {
		if l.followers[i].id == id {
			return &l.followers[i]
		}
	}
	return nil
}

// OnLocalAppend records that the leader's log now ends at logEnd.
//
// quietFetchMs (nil: none) is, per follower, the time of its latest quiet
// fetch (one the wrapper admitted without OnFollowerFetch while Quiet
// held, see there), or any time before this epoch began if none. Each is
// a fetch that found the follower holding the whole log, so Kafka's
// ReplicaState.updateFetchState would have made it the follower's
// caught-up time; it becomes that here, before the log end moves past the
// follower. A follower that stopped fetching has no recent quiet fetch and
// drops out of the ISR replica.lag.time.max.ms after its last one.
func (l *Leader) OnLocalAppend(logEnd int64, quietFetchMs func(id int32) int64) error {
	if logEnd < l.logEnd {
		return fmt.Errorf("leader log end moved back from %d to %d", l.logEnd, logEnd)
	}
	if logEnd > l.logEnd && quietFetchMs != nil {
		l.foldQuietFetches(quietFetchMs)
	}
	l.logEnd = logEnd
	return nil
}

// foldQuietFetches makes each follower's latest quiet fetch its caught-up
// time if that is later. A quiet fetch is only ever admitted at the log
// end (Quiet), so its time is one at which the follower held the whole log
// whatever happened since; one from before this epoch is ignored.
func (l *Leader) foldQuietFetches(quietFetchMs func(id int32) int64) {
	for i := range l.followers {
		f := &l.followers[i]
		if t := quietFetchMs(f.id); t >= l.startMs {
			f.lastCaughtUpMs = max(f.lastCaughtUpMs, t)
		}
	}
}

// Quiet reports whether a fetch from any follower at the log end would
// change nothing but the follower's fetch times: every follower's recorded
// position is the log end (so its fetch moves no offset and no high
// watermark) and every replica is in the ISR (so no shrink and no
// expansion can be due; a caught-up follower is in sync). It returns the
// log end such a fetch asks for.
//
// A wrapper may then admit such a fetch without OnFollowerFetch and keep
// only its time, which it hands to OnLocalAppend (quietFetchMs): an idle
// leader of thousands of partitions is fetched from twice per
// replica.fetch.wait.max.ms per follower, and recording each position it
// already has was most of an idle broker's CPU. Tick proposes nothing
// while Quiet holds either.
func (l *Leader) Quiet() (logEnd int64, ok bool) {
	if len(l.state.ISR) != len(l.state.Replicas) {
		return -1, false
	}
	for i := range l.followers {
		if l.followers[i].offset != l.logEnd {
			return -1, false
		}
	}
	if invariant.Panics {
		if c, ok := l.hwCandidate(); ok && c > l.hw {
			invariant.Broken("quiet at log end %d, yet the HW %d could move to %d", l.logEnd, l.hw, c)
		}
	}
	return l.logEnd, true
}

// OnLocalDurable records that the leader's log is durable up to durableEnd
// (a group-committed fsync finished; with write.caching=true, the node calls
// it with the log end offset after each append). Fsyncs may finish out of
// order, so an older durable end is ignored. It reports whether the HW moved.
func (l *Leader) OnLocalDurable(durableEnd int64) (hwAdvanced bool, err error) {
	if durableEnd > l.logEnd {
		return false, fmt.Errorf("durable end %d is past the log end %d", durableEnd, l.logEnd)
	}
	if durableEnd <= l.durableEnd {
		return false, nil
	}
	l.durableEnd = durableEnd
	return l.maybeAdvanceHW(), nil
}

// OnFollowerFetch records a fetch from follower id at nowMs. fetchOffset is
// the offset in the Fetch request, which is the follower's durable end. It
// reports whether the HW moved. A fetch from a broker that is not a replica
// gets NOT_LEADER_OR_FOLLOWER and one past the leader's log end
// OFFSET_OUT_OF_RANGE, as in Kafka; neither changes any state.
//
// After it the node should call Tick: a follower that caught up may now join
// the ISR (Kafka expands on the fetch path).
func (l *Leader) OnFollowerFetch(id int32, fetchOffset int64, nowMs int64) (hwAdvanced bool, err error) {
	f := l.follower(id)
	if f == nil {
		return false, fmt.Errorf("fetch from broker %d, not a follower of replicas %v: %w", id, l.state.Replicas, kerr.NotLeaderForPartition)
	}
	if fetchOffset < 0 || fetchOffset > l.logEnd {
		return false, fmt.Errorf("follower %d fetch offset %d is outside 0..%d: %w", id, fetchOffset, l.logEnd, kerr.OffsetOutOfRange)
	}
	// Kafka's ReplicaState.updateFetchState: caught up now when the follower
	// has everything the leader has; caught up as of its previous fetch when
	// it has everything the leader had then. The second rule keeps a follower
	// under steady load (always one fetch behind) in the ISR.
	switch {
	case fetchOffset >= l.logEnd:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, nowMs)
	case f.lastFetchLogEnd != unknownOffset && fetchOffset >= f.lastFetchLogEnd:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	moved := f.offset != fetchOffset
	f.offset = fetchOffset
	f.lastFetchMs = nowMs
	f.lastFetchLogEnd = l.logEnd
	if !moved {
		// The HW is a function of the durable end, the maximal ISR and
		// the followers' offsets, and every change to one of them
		// recomputes it (a proposed addition only holds it back): with
		// this follower where it was, it cannot move. An idle follower's
		// fetch is almost always this.
		if invariant.Panics {
			if c, ok := l.hwCandidate(); ok && c > l.hw {
				invariant.Broken("follower %d at %d unchanged, yet the HW %d could move to %d", id, fetchOffset, l.hw, c)
			}
		}
		return false, nil
	}
	return l.maybeAdvanceHW(), nil
}

// HighWatermark is the offset below which records are committed: durable on
// every member of the maximal ISR. Consumers read only below it.
func (l *Leader) HighWatermark() int64 { return l.hw }

// Replicas is the committed replica set; the caller must not modify it
// (ISR and State copy, this is asked at every step).
func (l *Leader) Replicas() []int32 { return l.state.Replicas }

// ISR returns the committed in-sync replica set.
func (l *Leader) ISR() []int32 { return slices.Clone(l.state.ISR) }

// State returns the committed partition state the leader works from.
func (l *Leader) State() State { return l.state.clone() }

// maybeAdvanceHW moves the HW to the minimum durable end over the maximal
// ISR if that is higher (Kafka's maybeIncrementLeaderHW) and reports whether
// it moved. The HW never goes back: consumers may already have read below it.
func (l *Leader) maybeAdvanceHW() bool {
	candidate, ok := l.hwCandidate()
	if !ok || candidate <= l.hw {
		return false
	}
	l.hw = candidate
	return true
}

// hwCandidate is the minimum durable end over the maximal ISR; !ok when
// the HW is frozen (KIP-966: see Config.FreezeHighWatermarkUnderMinISR).
func (l *Leader) hwCandidate() (candidate int64, ok bool) {
	if l.cfg.FreezeHighWatermarkUnderMinISR && len(l.state.ISR) < l.effectiveMinISR() {
		return 0, false
	}
	candidate = l.durableEnd
	l.forEachMaximalISR(func(id int32) {
		if f := l.follower(id); f != nil && f.offset < candidate {
			candidate = f.offset
		}
	})
	return candidate, true
}

// forEachMaximalISR calls fn for every member of the committed ISR and of
// the pending proposal (a member of both is visited twice). This union is
// Kafka's "maximal ISR" (KIP-497): a proposed addition counts at once, a
// proposed removal only once the controller has committed it.
func (l *Leader) forEachMaximalISR(fn func(id int32)) {
	for _, id := range l.state.ISR {
		fn(id)
	}
	if l.pend != nil {
		for _, id := range l.pend.NewISR {
			fn(id)
		}
	}
}

// maximalISR returns the maximal ISR without duplicates, committed members
// first.
func (l *Leader) maximalISR() []int32 {
	out := slices.Clone(l.state.ISR)
	if l.pend != nil {
		for _, id := range l.pend.NewISR {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// effectiveMinISR caps min.insync.replicas at the replication factor, as
// Kafka's Partition.effectiveMinIsr does: a topic whose setting exceeds its
// replica count still accepts acks=all once every replica is in sync.
func (l *Leader) effectiveMinISR() int {
	return min(int(l.cfg.MinInsyncReplicas), len(l.state.Replicas))
}
