// Package replicafetch is the replica-fetcher session of a follower with
// one leader, as a core: it builds the requests (OffsetForLeaderEpoch to
// reconcile a divergent tail, KIP-101/279; Fetch to copy the leader's
// log), and turns their answers into actions on the partitions it follows
// (truncate, restart at an offset, append these batches) and into its own
// per-partition state (reconcile first, back off a refused partition).
//
// A Session holds no lock, reads no clock and starts no goroutine: the
// time comes in as an argument, the requests and actions go out as data.
// internal/node wraps it with its goroutine and RPC connection,
// internal/sim with its event queue. One request is in flight at a time:
// the runtime sends what Next returns and hands the answer to Answer
// before calling Next again. A follower fsyncs what it appended before the
// next Next, so the offset each fetch carries is what it holds durably.
package replicafetch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/storage"
)

// Follower is what a session reads of a partition it follows: its log
// (offsets and the epoch cache) and its high watermark. Every change goes
// out as an Action.
type Follower interface {
	Log() *storage.Log
	HighWatermark() int64
}

// view is one followed partition's reads, named.
type view struct {
	topic     string
	partition int32
	log       *storage.Log
	hw        int64
}

func (v view) Topic() string              { return v.topic }
func (v view) Partition() int32           { return v.partition }
func (v view) LogStartOffset() int64      { return v.log.LogStartOffset() }
func (v view) LogEndOffset() int64        { return v.log.LogEndOffset() }
func (v view) HighWatermark() int64       { return v.hw }
func (v view) LatestEpoch() (int32, bool) { return v.log.Epochs().Latest() }
func (v view) EndOffsetFor(epoch int32) (int32, int64) {
	return v.log.Epochs().EndOffsetFor(epoch, v.log.LogEndOffset())
}

func (s *Session[P]) view(p P) view { return viewOf(p, s.parts[p]) }

func viewOf[P Follower](p P, st *follow) view {
	return view{topic: st.topic, partition: st.partition, log: p.Log(), hw: p.HighWatermark()}
}

// Replica is a followed partition with the follower-side changes the
// session's actions ask for (the partition runtime's existing methods).
type Replica interface {
	Follower
	// TruncateTo removes the log from offset on and rebuilds what derives
	// from it (producer state, durable end, high watermark).
	TruncateTo(offset int64) error
	// RestartAt empties the log and starts it at offset.
	RestartAt(offset int64) error
	// AppendFromLeader appends the leader's batches keeping their offsets
	// and epochs, makes them durable (unless write.caching) and follows
	// the leader's high watermark; it does nothing if the replica no
	// longer follows epoch.
	AppendFromLeader(batches []byte, leaderHW int64, epoch int32) error
}

// Do carries out a on its partition.
func Do[P Replica](a Action[P]) error {
	switch a.Kind {
	case Truncate:
		return a.P.TruncateTo(a.Offset)
	case RestartAt:
		return a.P.RestartAt(a.Offset)
	case Append:
		return a.P.AppendFromLeader(a.Batches, a.LeaderHW, a.Epoch)
	}
	return fmt.Errorf("unknown action %v", a.Kind)
}

// Config is a session's fixed settings.
type Config struct {
	ReplicaID         int32
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	MaxBytes          int32         // replica.fetch.response.max.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	// RefusalPause is how long a partition the leader refused waits: the
	// leader or this broker has not applied the latest metadata yet, and
	// a new assignment (with a new epoch) replaces the state anyway.
	RefusalPause time.Duration
	// MaxTruncationRounds bounds the OffsetForLeaderEpoch exchanges of one
	// reconciliation (KIP-279 may need several; each asks for a strictly
	// older epoch, so more means a broken log).
	MaxTruncationRounds int
}

// Assignment is one partition to follow, in the leader epoch it follows.
type Assignment[P Follower] struct {
	P         P
	Topic     string
	Partition int32
	Epoch     int32
}

type follow struct {
	topic     string
	partition int32
	epoch     int32
	// truncate: reconcile with the leader before fetching.
	truncate bool
	rounds   int           // OffsetForLeaderEpoch exchanges of this reconciliation
	retryAt  time.Duration // a refused partition waits until then
}

// Session follows the partitions of one leader.
type Session[P interface {
	comparable
	Follower
}] struct {
	cfg   Config
	parts map[P]*follow
	// order is the partitions followed, in the order Assign named them,
	// with their state: a round walks it without looking each up.
	order  []followed[P]
	flight *flight[P]
	// fetches is the fetch session (KIP-227) with the leader: an idle
	// fetch carries no partitions, a busy one only those whose fetch
	// state changed.
	fetches *fetchsession.Builder
	// spare is the flight of the previous request, whose buffers the next
	// one reuses (newFlight); eligible, fetchable and want are a round's
	// buffers, likewise reused: a follower builds a round every fetch,
	// over every partition it follows.
	spare               *flight[P]
	eligible, fetchable []followed[P]
	want                []fetchsession.Partition
}

type followed[P any] struct {
	p  P
	st *follow
}

type sent[P any] struct {
	key    fetchsession.Key
	p      P
	epoch  int32
	latest int32 // the epoch asked about (OffsetForLeaderEpoch)
}

// flight is what a request in flight asked for, in the order it asked.
// Its index by partition is built only when an answer names one: the
// answer to an idle incremental fetch names none.
type flight[P any] struct {
	fetch bool // else OffsetForLeaderEpoch
	// sent is what an OffsetForLeaderEpoch asked; fetched what a Fetch
	// asked, each partition in the epoch of its state (a follow's epoch
	// never changes: a new epoch is a new follow).
	sent    []sent[P]
	fetched []followed[P]
	index   map[fetchsession.Key]int
	indexed bool
}

// New returns a session following nothing.
func New[P interface {
	comparable
	Follower
}](cfg Config) *Session[P] {
	return &Session[P]{cfg: cfg, parts: map[P]*follow{}, fetches: fetchsession.NewBuilder()}
}

// NewConnection tells the session its requests now go over a new
// connection, which may be to a restarted leader: the fetch session starts
// over with a full fetch.
func (s *Session[P]) NewConnection() { s.fetches.Reset() }

// Assign replaces the partitions followed. A partition kept in the same
// epoch keeps its state; a new one, or a new epoch, starts by reconciling
// (the leader may have a different history than the one this replica
// followed).
func (s *Session[P]) Assign(parts []Assignment[P]) {
	next := make(map[P]*follow, len(parts))
	order := make([]P, 0, len(parts))
	for _, a := range parts {
		st, ok := s.parts[a.P]
		if !ok || st.epoch != a.Epoch {
			st = &follow{topic: a.Topic, partition: a.Partition, epoch: a.Epoch, truncate: true}
		}
		if _, dup := next[a.P]; !dup {
			order = append(order, a.P)
		}
		next[a.P] = st
	}
	// The round buffers hold only partitions of the current assignment.
	s.eligible, s.fetchable = nil, nil
	s.parts, s.order = next, make([]followed[P], len(order))
	for i, p := range order {
		s.order[i] = followed[P]{p: p, st: next[p]}
	}
}

// Followed reports the state of a partition: the epoch it follows and
// whether it must reconcile before fetching.
func (s *Session[P]) Followed(p P) (epoch int32, truncate, ok bool) {
	st, ok := s.parts[p]
	if !ok {
		return 0, false, false
	}
	return st.epoch, st.truncate, true
}

// Step is what to do next: send Request, or, when it is nil, call Next
// again after Wait (or at the next Assign).
type Step struct {
	Request kmsg.Request
	Wait    time.Duration
	// Violations are broken invariants found while deciding.
	Violations []string
}

// Next decides the next request at now. Reconciliation goes first: one
// OffsetForLeaderEpoch for every partition that must reconcile, until
// each has; then one Fetch for every partition not held back.
func (s *Session[P]) Next(now time.Duration, clusterID string) Step {
	return s.NextHolding(now, clusterID, nil, 0)
}

// NextHolding is Next with the follower's replication throttle (KIP-73):
// hold reports the partitions whose fetching must wait (throttled, with
// the follower's quota spent); they are left out of this fetch, as
// Kafka's follower leaves them out, and the others are fetched as usual.
// When every partition is held the step waits holdWait.
func (s *Session[P]) NextHolding(now time.Duration, clusterID string, hold func(P) bool, holdWait time.Duration) Step {
	var step Step
	if s.flight != nil {
		step.Violations = append(step.Violations, "replica fetcher asked for a request with one in flight")
		return step
	}
	// The usual round: every partition fetchable, none paused, held or
	// reconciling. It fetches s.order as it is, without copying it.
	settled := hold == nil && len(s.order) > 0
	for _, o := range s.order {
		if !settled {
			break
		}
		settled = now >= o.st.retryAt && !o.st.truncate
	}
	if settled {
		step.Request = s.fetchRequest(clusterID, s.order)
		return step
	}
	eligible := s.eligible[:0]
	wait := s.cfg.RefusalPause
	for _, o := range s.order {
		if now < o.st.retryAt {
			wait = min(wait, o.st.retryAt-now)
			continue
		}
		eligible = append(eligible, o)
	}
	s.eligible = eligible
	if len(eligible) == 0 {
		step.Wait = wait
		return step
	}

	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epochs.Version = 3
	epochs.ReplicaID = s.cfg.ReplicaID
	f := s.newFlight(false)
	fetchable := s.fetchable[:0]
	defer func() { s.fetchable = fetchable }()
	for _, o := range eligible {
		p, st := o.p, o.st
		if !st.truncate {
			fetchable = append(fetchable, o)
			continue
		}
		v := viewOf(p, st)
		latest, ok := v.LatestEpoch()
		if !ok {
			// Nothing of ours can diverge. An empty log that still names
			// an epoch (one this replica led without appending) must
			// reconcile all the same: the truncation at its end drops that
			// epoch, which it would otherwise keep sending as its last
			// fetched one, and the leader, which never had it, would
			// answer every fetch with a divergence (sim seed 4255).
			st.truncate, st.rounds = false, 0
			fetchable = append(fetchable, o)
			continue
		}
		if st.rounds >= s.cfg.MaxTruncationRounds {
			step.Violations = append(step.Violations, fmt.Sprintf("%s-%d: log did not converge with the leader's after %d truncation rounds", v.Topic(), v.Partition(), st.rounds))
			s.pause(p, st.epoch, now)
			continue
		}
		ti := topicIndex(&epochs.Topics, v.Topic(), func(t string) kmsg.OffsetForLeaderEpochRequestTopic {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = t
			return rt
		}, func(t kmsg.OffsetForLeaderEpochRequestTopic) string { return t.Topic })
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = v.Partition()
		rp.CurrentLeaderEpoch = st.epoch
		rp.LeaderEpoch = latest
		epochs.Topics[ti].Partitions = append(epochs.Topics[ti].Partitions, rp)
		f.add(v, p, st.epoch, latest)
	}
	if len(epochs.Topics) > 0 {
		s.flight = f
		step.Request = epochs
		return step
	}
	s.spare = f // not sent
	if len(fetchable) == 0 {
		step.Wait = s.cfg.RefusalPause
		return step
	}
	if hold != nil {
		fetchable = slices.DeleteFunc(fetchable, func(o followed[P]) bool { return hold(o.p) })
		if len(fetchable) == 0 {
			step.Wait = max(holdWait, time.Millisecond)
			return step
		}
	}
	step.Request = s.fetchRequest(clusterID, fetchable)
	return step
}

// fetchRequest builds the Fetch of fetchable, which the flight keeps
// as it is until the answer (s.order, or the round's fetchable buffer,
// which no other round touches before the answer is taken).
func (s *Session[P]) fetchRequest(clusterID string, fetchable []followed[P]) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = s.cfg.ReplicaID
	req.MaxWaitMillis = int32(s.cfg.MaxWait.Milliseconds())
	req.MinBytes = max(s.cfg.MinBytes, 1)
	req.MaxBytes = s.cfg.MaxBytes
	req.ClusterID = kmsg.StringPtr(clusterID)
	f := s.newFlight(true)
	f.fetched = fetchable
	want := s.want[:0]
	for _, o := range fetchable {
		// The fetch state only: the log's bounds and latest epoch are
		// published together (one cache line), and the high watermark
		// is not asked.
		st, l := o.st, o.p.Log()
		fp := fetchsession.Partition{
			Key:                fetchsession.Key{Name: st.topic, Partition: st.partition},
			FetchOffset:        l.LogEndOffset(),
			LogStartOffset:     l.LogStartOffset(),
			MaxBytes:           s.cfg.PartitionMaxBytes,
			CurrentLeaderEpoch: st.epoch,
			LastFetchedEpoch:   -1,
		}
		if latest, ok := l.LatestEpoch(); ok {
			fp.LastFetchedEpoch = latest
		}
		want = append(want, fp)
	}
	// Within a session only the partitions whose fetch state changed are
	// sent (those held back are forgotten); the leader answers only those
	// with news.
	fetchsession.FillRequest(req, s.fetches.Build(want))
	s.want = want
	s.flight = f
	return req
}

// topicIndex finds or appends the request topic named name.
func topicIndex[T any](topics *[]T, name string, mk func(string) T, nameOf func(T) string) int {
	for i, t := range *topics {
		if nameOf(t) == name {
			return i
		}
	}
	*topics = append(*topics, mk(name))
	return len(*topics) - 1
}

func (f *flight[P]) add(p view, key P, epoch, latest int32) {
	f.sent = append(f.sent, sent[P]{key: fetchsession.Key{Name: p.Topic(), Partition: p.Partition()}, p: key, epoch: epoch, latest: latest})
}

// lookup is what f sent for a partition; a partition sent twice is
// found as sent last.
func (f *flight[P]) lookup(key fetchsession.Key) (sent[P], bool) {
	if !f.indexed {
		if f.index == nil {
			f.index = make(map[fetchsession.Key]int, len(f.sent))
		}
		for i, sp := range f.sent {
			f.index[sp.key] = i
		}
		for i, o := range f.fetched {
			f.index[fetchsession.Key{Name: o.st.topic, Partition: o.st.partition}] = i
		}
		f.indexed = true
	}
	i, ok := f.index[key]
	switch {
	case !ok:
		return sent[P]{}, false
	case f.fetch:
		o := f.fetched[i]
		return sent[P]{key: key, p: o.p, epoch: o.st.epoch}, true
	}
	return f.sent[i], true
}

// newFlight starts a request's record of what it asks for, in the
// buffers of the previous request (one is in flight at a time, and its
// answer is done with it before the next is built).
func (s *Session[P]) newFlight(fetch bool) *flight[P] {
	f := s.spare
	s.spare = nil
	if f == nil {
		return &flight[P]{fetch: fetch}
	}
	clear(f.sent) // holds no P past its answer
	if f.indexed {
		clear(f.index)
	}
	f.fetch, f.sent, f.fetched, f.indexed = fetch, f.sent[:0], nil, false
	return f
}

// ActionKind says what an Action does to its partition.
type ActionKind int8

const (
	// Truncate the log from Offset on (a divergent tail; at the log end
	// it only drops an epoch that starts there and holds nothing) and
	// rebuild what derives from it.
	Truncate ActionKind = iota + 1
	// RestartAt empties the log and starts it at Offset: the leader no
	// longer has what this replica would fetch next (retention).
	RestartAt
	// Append the leader's Batches keeping their offsets and epochs, make
	// them durable, and follow the leader's high watermark LeaderHW.
	Append
)

// Action is one change to a followed partition, for the leader epoch
// Epoch (a runtime whose partition changed role or epoch since skips it).
type Action[P any] struct {
	Kind     ActionKind
	P        P
	Epoch    int32
	Offset   int64
	Batches  []byte
	LeaderHW int64
}

// Ready is what an answer leads to.
type Ready[P any] struct {
	// Actions to carry out, in order, before the next Next; report a
	// failed one with Failed.
	Actions []Action[P]
	// Backoff: the exchange failed as a whole; wait before the next
	// request.
	Backoff bool
	// Err is why, when Backoff.
	Err error
	// Warnings are worth a log line; Violations are broken invariants.
	Warnings   []string
	Violations []string
}

// Answer takes the answer to the request Next returned (err: none came).
func (s *Session[P]) Answer(now time.Duration, resp kmsg.Response, err error) Ready[P] {
	var rd Ready[P]
	f := s.flight
	s.flight = nil
	if f != nil {
		defer func() { f.fetched, s.spare = nil, f }() // its answer is done with it
	}
	switch {
	case f == nil:
		rd.Violations = append(rd.Violations, "replica fetcher got an answer with no request in flight")
		return rd
	case err != nil:
		if f.fetch {
			s.fetches.Reset() // the leader may have taken the epoch
		}
		rd.Backoff, rd.Err = true, err
		return rd
	}
	if f.fetch {
		r, ok := resp.(*kmsg.FetchResponse)
		if !ok {
			s.fetches.Reset()
			rd.Backoff, rd.Err = true, fmt.Errorf("a %T answered a Fetch", resp)
			return rd
		}
		s.fetches.Answered(r.ErrorCode, r.SessionID)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			rd.Backoff, rd.Err = true, err
			return rd
		}
		for _, t := range r.Topics {
			for _, rp := range t.Partitions {
				if sp, ok := s.current(f, t.Topic, rp.Partition); ok {
					s.fetched(now, sp, rp, &rd)
				}
			}
		}
		return rd
	}
	r, ok := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if !ok {
		rd.Backoff, rd.Err = true, fmt.Errorf("a %T answered an OffsetForLeaderEpoch", resp)
		return rd
	}
	for _, t := range r.Topics {
		for _, ans := range t.Partitions {
			if sp, ok := s.current(f, t.Topic, ans.Partition); ok {
				s.reconciled(now, sp, ans, &rd)
			}
		}
	}
	return rd
}

// current finds what was sent for a partition the answer names, if it is
// still followed in that epoch (else the answer is stale for it).
func (s *Session[P]) current(f *flight[P], topic string, partition int32) (sent[P], bool) {
	sp, ok := f.lookup(fetchsession.Key{Name: topic, Partition: partition})
	if !ok {
		return sp, false
	}
	st := s.parts[sp.p]
	return sp, st != nil && st.epoch == sp.epoch
}

// reconciled applies one OffsetForLeaderEpoch answer: truncate where the
// logs diverge, and ask again unless the answer settles it.
func (s *Session[P]) reconciled(now time.Duration, sp sent[P], ans kmsg.OffsetForLeaderEpochResponseTopicPartition, rd *Ready[P]) {
	st, p := s.parts[sp.p], s.view(sp.p)
	if err := kerr.ErrorForCode(ans.ErrorCode); err != nil {
		// FENCED or UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER: the
		// leader's metadata and ours disagree for now.
		s.pause(sp.p, sp.epoch, now)
		return
	}
	tr, err := replication.TruncationPoint(replication.FollowerLog{
		LogEndOffset:  p.LogEndOffset(),
		HighWatermark: p.HighWatermark(),
		EndOffsetFor:  p.EndOffsetFor,
	}, sp.latest, replication.EpochEndOffset{Epoch: ans.LeaderEpoch, EndOffset: ans.EndOffset})
	if err != nil {
		rd.Warnings = append(rd.Warnings, fmt.Sprintf("%s-%d: truncation point: %v", p.Topic(), p.Partition(), err))
		s.pause(sp.p, sp.epoch, now)
		return
	}
	// At the log end too: storage.Log.Truncate then drops an epoch
	// without batches (one this replica led briefly without appending),
	// which it would otherwise keep naming as its last fetched epoch and
	// be told to reconcile forever (found by internal/sim).
	if tr.Offset <= p.LogEndOffset() {
		rd.Actions = append(rd.Actions, Action[P]{Kind: Truncate, P: sp.p, Epoch: sp.epoch, Offset: tr.Offset})
	}
	if tr.Complete {
		st.truncate, st.rounds = false, 0
		return
	}
	st.rounds++
}

// fetched is the per-partition error switch of a Fetch answer.
func (s *Session[P]) fetched(now time.Duration, sp sent[P], rp kmsg.FetchResponseTopicPartition, rd *Ready[P]) {
	st, p := s.parts[sp.p], sp.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if s.view(p).LogEndOffset() < rp.LogStartOffset {
			// The leader deleted what we would fetch next (retention):
			// start over at its log start.
			rd.Actions = append(rd.Actions, Action[P]{Kind: RestartAt, P: p, Epoch: sp.epoch, Offset: rp.LogStartOffset})
		} else {
			st.truncate = true
		}
		return
	case errors.Is(err, kerr.UnknownLeaderEpoch):
		return // the leader has not applied the new epoch yet: retry
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, unknown partition,
		// a storage error: wait for the metadata that explains it.
		s.pause(p, sp.epoch, now)
		return
	}
	if rp.DivergingEpoch.EndOffset >= 0 { // absent: -1
		// Our tail diverges from the leader's: reconcile (truncate)
		// before fetching again.
		st.truncate = true
		return
	}
	rd.Actions = append(rd.Actions, Action[P]{Kind: Append, P: p, Epoch: sp.epoch, Batches: rp.RecordBatches, LeaderHW: rp.HighWatermark})
}

// Failed reports that the runtime could not carry out a (a failed
// append, truncation or restart): the partition reconciles again after a
// pause.
func (s *Session[P]) Failed(now time.Duration, a Action[P]) {
	s.pause(a.P, a.Epoch, now)
}

func (s *Session[P]) pause(p P, epoch int32, now time.Duration) {
	if st, ok := s.parts[p]; ok && st.epoch == epoch {
		st.retryAt = now + s.cfg.RefusalPause
		st.truncate, st.rounds = true, 0
	}
}

// Config is the session's settings.
func (s *Session[P]) Config() Config { return s.cfg }

func (k ActionKind) String() string {
	switch k {
	case Truncate:
		return "truncate"
	case RestartAt:
		return "restart"
	case Append:
		return "append"
	}
	return fmt.Sprintf("ActionKind(%d)", int8(k))
}
