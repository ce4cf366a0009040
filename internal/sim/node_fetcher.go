package sim

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
)

// fetcher is internal/node's replicaFetcher for one leader: reconcile a
// divergent tail with OffsetForLeaderEpoch (KIP-101/279), then fetch,
// append, fsync, and only then fetch again, so the offset each fetch
// carries is what this replica holds durably. One request in flight.
type fetcher struct {
	p       *process
	leader  int32
	parts   map[*replica]*followState
	order   []*replica
	busy    bool
	stopped bool
	// session is replicaFetcher.session: the follower's side of a fetch
	// session (KIP-227) with the leader.
	session *fetchsession.Builder
}

type followState struct {
	epoch    int32
	truncate bool
	retryAt  int64 // simulated ns; a refused partition waits
}

const maxTruncationRounds = 16

func (f *fetcher) assign(rs []*replica) {
	next := map[*replica]*followState{}
	for _, r := range rs {
		st, ok := f.parts[r]
		if !ok || st.epoch != r.state.LeaderEpoch {
			st = &followState{epoch: r.state.LeaderEpoch, truncate: true}
		}
		next[r] = st
	}
	f.parts, f.order = next, rs
	if !f.busy {
		f.busy = true
		f.p.n.after(0, f.round)
	}
}

// round runs one exchange with the leader and schedules the next.
func (f *fetcher) round() {
	if f.stopped || f.p.n.proc != f.p {
		return
	}
	now := int64(f.p.n.c.s.now)
	var work []*replica
	for _, r := range f.order {
		if st := f.parts[r]; st != nil && now >= st.retryAt {
			work = append(work, r)
		}
	}
	if len(work) == 0 {
		f.p.n.after(pauseAfterRefusal, f.round)
		return
	}
	for _, r := range work {
		st := f.parts[r]
		if !st.truncate {
			continue
		}
		f.reconcile(r, *st, 0)
		return
	}
	f.fetch(work)
}

func (f *fetcher) again(err error) {
	if err != nil {
		f.p.n.after(fetchBackoff, f.round)
		return
	}
	f.p.n.after(0, f.round)
}

// reconcile asks where this replica's latest epoch ends on the leader and
// truncates there (replicaFetcher.reconcile), one round per answer.
func (f *fetcher) reconcile(r *replica, st followState, round int) {
	latest, ok := r.log.Epochs().Latest()
	if !ok || r.log.LogEndOffset() == r.log.LogStartOffset() {
		f.setTruncated(r, st.epoch)
		f.again(nil)
		return
	}
	if round >= maxTruncationRounds {
		f.p.n.c.violation("%s on %s: log did not converge after %d truncation rounds", r.name(), f.p.n, round)
		f.again(errors.New("no convergence"))
		return
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 3
	req.ReplicaID = f.p.n.id
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition = r.index
	rp.CurrentLeaderEpoch = st.epoch
	rp.LeaderEpoch = latest
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	f.p.call(f.leader, req, func(resp kmsg.Response, err error) {
		if f.stopped || f.parts[r] == nil || f.parts[r].epoch != st.epoch {
			f.again(nil)
			return
		}
		if err != nil {
			f.again(err)
			return
		}
		o := resp.(*kmsg.OffsetForLeaderEpochResponse)
		if len(o.Topics) != 1 || len(o.Topics[0].Partitions) != 1 {
			f.again(errors.New("malformed OffsetForLeaderEpoch answer"))
			return
		}
		ans := o.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(ans.ErrorCode); err != nil {
			f.pause(r, st.epoch)
			f.again(err)
			return
		}
		cache := r.log.Epochs()
		tr, err := replication.TruncationPoint(replication.FollowerLog{
			LogEndOffset:  r.log.LogEndOffset(),
			HighWatermark: r.hw,
			EndOffsetFor: func(epoch int32) (int32, int64) {
				return cache.EndOffsetFor(epoch, r.log.LogEndOffset())
			},
		}, latest, replication.EpochEndOffset{Epoch: ans.LeaderEpoch, EndOffset: ans.EndOffset})
		if err != nil {
			f.p.n.tracef("%s truncation point: %v", r.name(), err)
			f.again(err)
			return
		}
		// At the log end too: storage.Log.Truncate then drops an epoch
		// with no batches, which the follower would otherwise keep naming
		// as its last fetched epoch. internal/node's fetcher still calls
		// truncateTo only below the log end and needs the same change.
		if tr.Offset <= r.log.LogEndOffset() {
			if err := r.truncateTo(tr.Offset); err != nil {
				f.p.n.tracef("%s: %v", r.name(), err)
				f.again(err)
				return
			}
		}
		if tr.Complete {
			f.setTruncated(r, st.epoch)
			f.again(nil)
			return
		}
		f.reconcile(r, st, round+1)
	})
}

func (f *fetcher) setTruncated(r *replica, epoch int32) {
	if st, ok := f.parts[r]; ok && st.epoch == epoch {
		st.truncate = false
	}
}

func (f *fetcher) pause(r *replica, epoch int32) {
	if st, ok := f.parts[r]; ok && st.epoch == epoch {
		st.retryAt = int64(f.p.n.c.s.now + pauseAfterRefusal)
		st.truncate = true
	}
}

func (f *fetcher) markTruncate(r *replica) {
	if st, ok := f.parts[r]; ok {
		st.truncate = true
	}
}

func (f *fetcher) fetch(work []*replica) {
	p := f.p
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = p.n.id
	req.MaxWaitMillis = int32(fetchMaxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	req.ClusterID = kmsg.StringPtr(p.image.ClusterID())
	type sent struct {
		r     *replica
		epoch int32
	}
	index := map[string]map[int32]sent{}
	want := make([]fetchsession.Partition, 0, len(work))
	for _, r := range work {
		if index[r.topic] == nil {
			index[r.topic] = map[int32]sent{}
		}
		st := f.parts[r]
		fp := fetchsession.Partition{
			Key:                fetchsession.Key{Name: r.topic, Partition: r.index},
			FetchOffset:        r.log.LogEndOffset(),
			LogStartOffset:     r.log.LogStartOffset(),
			MaxBytes:           256 << 10,
			CurrentLeaderEpoch: st.epoch,
			LastFetchedEpoch:   -1,
		}
		if latest, ok := r.log.Epochs().Latest(); ok {
			fp.LastFetchedEpoch = latest
		}
		want = append(want, fp)
		index[r.topic][r.index] = sent{r, st.epoch}
	}
	if f.session == nil {
		f.session = fetchsession.NewBuilder()
	}
	fetchsession.FillRequest(req, f.session.Build(want))
	p.callTimeout(f.leader, req, fetchMaxWait+rpcTimeout, func(resp kmsg.Response, err error) {
		if f.stopped {
			return
		}
		if err != nil {
			f.session.Reset()
			f.again(err)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		f.session.Answered(fr.ErrorCode, fr.SessionID)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			f.again(err)
			return
		}
		for _, t := range fr.Topics {
			for _, rp := range t.Partitions {
				s, ok := index[t.Topic][rp.Partition]
				if !ok || f.parts[s.r] == nil || f.parts[s.r].epoch != s.epoch {
					continue
				}
				f.handlePartition(s.r, s.epoch, rp)
			}
		}
		f.again(nil)
	})
}

// handlePartition is replicaFetcher.handlePartition.
func (f *fetcher) handlePartition(r *replica, epoch int32, rp kmsg.FetchResponseTopicPartition) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if r.log.LogEndOffset() < rp.LogStartOffset {
			if err := r.restartAt(rp.LogStartOffset); err != nil {
				f.p.n.tracef("%s: cannot restart follower log: %v", r.name(), err)
			}
		} else {
			f.markTruncate(r)
		}
		return
	case errors.Is(err, kerr.UnknownLeaderEpoch):
		return
	default:
		f.pause(r, epoch)
		return
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		f.markTruncate(r)
		return
	}
	if err := r.appendFromLeader(rp.RecordBatches, rp.HighWatermark, epoch); err != nil {
		f.p.n.tracef("%s follower append failed: %v", r.name(), err)
		f.pause(r, epoch)
	}
}

// appendFromLeader is partition.appendFromLeader: append keeping offsets
// and epochs, fsync before the next fetch reports it, follow the leader's
// high watermark.
func (r *replica) appendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	if r.role != metadata.RoleFollower || r.state.LeaderEpoch != epoch {
		return nil
	}
	if r.failed != nil {
		return r.failed
	}
	appended := false
	err := batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < r.log.LogEndOffset() {
			return nil
		}
		if _, err := r.log.AppendReplica(b, r.nowMs()); err != nil {
			return err
		}
		r.producers.Apply(h)
		appended = true
		return nil
	})
	if err != nil && errors.Is(err, batch.ErrTruncated) {
		err = nil // a partial trailing batch is normal (fetch size limit)
	}
	// Sync what was appended even when a later batch failed: the next
	// fetch reports the log end as held durably. internal/node's
	// appendFromLeader returns before its Sync here, so a follower whose
	// disk filled up mid-response claims unsynced batches and the leader
	// acknowledges acks=all on their strength (found by this simulator;
	// internal/node needs the same change).
	var durable int64
	if appended && !r.cfg.WriteCaching {
		d, err := r.log.Sync()
		if err != nil {
			r.fail(err)
			return err
		}
		durable = d
	}
	if r.cfg.WriteCaching {
		r.durableEnd = r.log.LogEndOffset()
	} else if durable > r.durableEnd {
		r.durableEnd = durable
	}
	if hw := min(leaderHW, r.durableEnd); hw > r.hw {
		r.hw = hw
	}
	if err != nil {
		return fmt.Errorf("append from leader: %w", err)
	}
	return nil
}

func (r *replica) truncateTo(offset int64) error {
	if r.leader != nil {
		return errors.New("a leader never truncates its log")
	}
	before := r.log.LogEndOffset()
	if err := r.log.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", r.name(), offset, err)
	}
	if r.log.LogEndOffset() == before {
		return nil
	}
	r.p.n.tracef("%s truncated divergent tail %d..%d", r.name(), r.log.LogEndOffset(), before)
	r.durableEnd = min(r.durableEnd, r.log.LogEndOffset())
	if r.hw > r.log.LogEndOffset() {
		r.hw = r.log.LogEndOffset()
	}
	return r.rebuildProducerState()
}

func (r *replica) restartAt(offset int64) error {
	if err := r.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	r.durableEnd = offset
	r.hw = offset
	return r.rebuildProducerState()
}
