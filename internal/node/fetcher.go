package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replication"
	"github.com/skein-log/skein/internal/rpc"
)

// fetchBackoff is the pause after a failed fetch or an unreachable leader.
const fetchBackoff = 100 * time.Millisecond

// maxTruncationRounds bounds the OffsetForLeaderEpoch exchanges of one
// reconciliation (KIP-279 may need several).
const maxTruncationRounds = 16

// fetcherManager runs one replica fetcher per leader this broker follows,
// as Kafka's replica fetcher threads do (num.replica.fetchers = 1).
type fetcherManager struct {
	b        *Broker
	mu       sync.Mutex
	fetchers map[int32]*replicaFetcher
	stopped  bool
	paused   atomic.Bool // see Broker.PauseReplicaFetching
}

func newFetcherManager(b *Broker) *fetcherManager {
	return &fetcherManager{b: b, fetchers: map[int32]*replicaFetcher{}}
}

// followState is what a fetcher knows of one partition it follows.
type followState struct {
	epoch    int32 // the leader epoch it follows
	truncate bool  // must reconcile with the leader before fetching
	// retryAt delays a partition the leader refused (it may not have
	// applied the metadata this follower acts on yet).
	retryAt time.Time
}

// update assigns every partition this broker follows to the fetcher of
// its leader. Called after each reconcile.
func (m *fetcherManager) update() {
	want := map[int32]map[*partition]int32{}
	for _, p := range m.b.partitionList() {
		leader, epoch, ok := p.following()
		if !ok {
			continue
		}
		if want[leader] == nil {
			want[leader] = map[*partition]int32{}
		}
		want[leader][p] = epoch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	for id, f := range m.fetchers {
		if _, ok := want[id]; !ok {
			f.shutdown()
			delete(m.fetchers, id)
		}
	}
	for id, parts := range want {
		f, ok := m.fetchers[id]
		if !ok {
			f = newReplicaFetcher(m.b, id)
			m.fetchers[id] = f
			go f.run()
		}
		f.assign(parts)
	}
}

func (m *fetcherManager) stopAll() {
	m.mu.Lock()
	m.stopped = true
	fs := m.fetchers
	m.fetchers = map[int32]*replicaFetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.shutdown()
		<-f.done
	}
}

// replicaFetcher copies the leader's log for the partitions it follows:
// it truncates a divergent tail by asking where its epoch ends (KIP-101,
// never by its own high watermark), then fetches, appends, fsyncs and only
// then fetches again, so the offset in each fetch is what it holds durably.
type replicaFetcher struct {
	b      *Broker
	leader int32

	mu    sync.Mutex
	parts map[*partition]*followState
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	conn  *rpc.Conn
	// session is the fetch session (KIP-227) with the leader, so an idle
	// fetch carries no partitions; only the run goroutine uses it.
	session *fetchsession.Builder
	// roundMu is held for each round, so a pause can wait for the round
	// in flight to end.
	roundMu sync.Mutex
}

func newReplicaFetcher(b *Broker, leader int32) *replicaFetcher {
	return &replicaFetcher{b: b, leader: leader, parts: map[*partition]*followState{}, session: fetchsession.NewBuilder(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

func (f *replicaFetcher) assign(parts map[*partition]int32) {
	f.mu.Lock()
	for p := range f.parts {
		if _, ok := parts[p]; !ok {
			delete(f.parts, p)
		}
	}
	for p, epoch := range parts {
		st, ok := f.parts[p]
		if !ok || st.epoch != epoch {
			f.parts[p] = &followState{epoch: epoch, truncate: true}
		}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *replicaFetcher) shutdown() { f.once.Do(func() { close(f.stop) }) }

func (f *replicaFetcher) run() {
	defer close(f.done)
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		work := f.snapshot()
		if len(work) == 0 {
			select {
			case <-f.stop:
				return
			case <-f.wake:
			case <-time.After(pauseAfterRefusal):
			}
			continue
		}
		f.roundMu.Lock()
		if f.b.fetchers.paused.Load() {
			f.roundMu.Unlock()
			select {
			case <-f.stop:
				return
			case <-f.wake: // resumed, or a new assignment to look at
			}
			continue
		}
		err := f.round(work)
		f.roundMu.Unlock()
		if errors.Is(err, errLeaderUnreachable) {
			f.b.suspect(f.leader)
		} else if err == nil {
			f.b.clearSuspect(f.leader)
		}
		if err != nil {
			if f.conn != nil && !errors.Is(err, errPaused) {
				f.b.log.Debug("replica fetch failed", "leader", f.leader, "err", err)
			}
			select {
			case <-f.stop:
				return
			case <-f.wake:
			case <-time.After(fetchBackoff):
			}
		}
	}
}

var (
	errPaused            = errors.New("all partitions paused")
	errLeaderUnreachable = errors.New("leader unreachable")
)

type fetchWork struct {
	p  *partition
	st followState
}

func (f *replicaFetcher) snapshot() []fetchWork {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fetchWork, 0, len(f.parts))
	now := time.Now()
	for p, st := range f.parts {
		if now.Before(st.retryAt) {
			continue
		}
		out = append(out, fetchWork{p, *st})
	}
	return out
}

func (f *replicaFetcher) setTruncated(p *partition, epoch int32) {
	f.mu.Lock()
	if st, ok := f.parts[p]; ok && st.epoch == epoch {
		st.truncate = false
	}
	f.mu.Unlock()
}

// pause holds a partition back for a while after the leader refused it:
// the leader or this broker has not applied the latest metadata yet, and
// a new assignment (with a new epoch) replaces the state anyway.
func (f *replicaFetcher) pause(p *partition, epoch int32) {
	f.mu.Lock()
	if st, ok := f.parts[p]; ok && st.epoch == epoch {
		st.retryAt = time.Now().Add(pauseAfterRefusal)
		st.truncate = true
	}
	f.mu.Unlock()
}

// pauseAfterRefusal is how long a refused partition waits before the
// fetcher tries it again.
const pauseAfterRefusal = 200 * time.Millisecond

func (f *replicaFetcher) connect(ctx context.Context) (*rpc.Conn, error) {
	if f.conn != nil {
		select {
		case <-f.conn.Done():
			f.conn = nil
		default:
			return f.conn, nil
		}
	}
	br, ok := f.b.Image().Broker(f.leader)
	if !ok {
		return nil, fmt.Errorf("leader %d is not registered", f.leader)
	}
	ep, ok := endpointOf(br, f.b.cfg.InterBrokerListenerName)
	if !ok {
		return nil, fmt.Errorf("leader %d has no %s endpoint", f.leader, f.b.cfg.InterBrokerListenerName)
	}
	conn, err := rpc.DialFrom(ctx, f.b.cfg.OutboundBindAddress, ep, fmt.Sprintf("skein-replica-%d", f.b.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	f.conn = conn
	f.session.Reset() // a new connection may be to a restarted leader
	return conn, nil
}

// round reconciles what needs it, then fetches once.
func (f *replicaFetcher) round(work []fetchWork) error {
	waitMax := max(f.b.cfg.ReplicaFetchWaitMax, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), waitMax+controllerRPCTimeout)
	defer cancel()
	conn, err := f.connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", errLeaderUnreachable, err)
	}
	var fetchable []fetchWork
	for _, w := range work {
		if w.st.truncate {
			if err := f.reconcile(ctx, conn, w); err != nil {
				f.b.log.Debug("log reconciliation with leader", "partition", w.p.name(), "err", err)
				continue
			}
			f.setTruncated(w.p, w.st.epoch)
		}
		fetchable = append(fetchable, w)
	}
	if len(fetchable) == 0 {
		return errPaused
	}
	return f.fetch(ctx, conn, fetchable, waitMax)
}

// reconcile truncates the local log where it diverges from the leader's
// (KIP-101/279): ask where our latest epoch ends on the leader, truncate,
// repeat until the answer agrees with our log.
func (f *replicaFetcher) reconcile(ctx context.Context, conn *rpc.Conn, w fetchWork) error {
	for round := 0; round < maxTruncationRounds; round++ {
		latest, ok := w.p.log.Epochs().Latest()
		if !ok || w.p.log.LogEndOffset() == w.p.log.LogStartOffset() {
			return nil // nothing of ours can diverge
		}
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version = 3
		req.ReplicaID = f.b.cfg.NodeID
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = w.p.topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = w.p.index
		rp.CurrentLeaderEpoch = w.st.epoch
		rp.LeaderEpoch = latest
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := conn.Request(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.OffsetForLeaderEpochResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("malformed OffsetForLeaderEpoch answer")
		}
		ans := r.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(ans.ErrorCode); err != nil {
			return err
		}
		cache := w.p.log.Epochs()
		tr, err := replication.TruncationPoint(replication.FollowerLog{
			LogEndOffset:  w.p.log.LogEndOffset(),
			HighWatermark: w.p.highWatermark.Load(),
			EndOffsetFor: func(epoch int32) (int32, int64) {
				return cache.EndOffsetFor(epoch, w.p.log.LogEndOffset())
			},
		}, latest, replication.EpochEndOffset{Epoch: ans.LeaderEpoch, EndOffset: ans.EndOffset})
		if err != nil {
			return err
		}
		// At the log end too: storage.Log.Truncate then drops an epoch
		// without batches (one this replica led briefly without
		// appending), which it would otherwise keep naming as its last
		// fetched epoch and be told to reconcile forever (found by
		// internal/sim).
		if tr.Offset <= w.p.log.LogEndOffset() {
			if err := w.p.truncateTo(tr.Offset); err != nil {
				return err
			}
		}
		if tr.Complete {
			return nil
		}
	}
	return fmt.Errorf("log of %s did not converge after %d rounds", w.p.name(), maxTruncationRounds)
}

func (f *replicaFetcher) fetch(ctx context.Context, conn *rpc.Conn, work []fetchWork, waitMax time.Duration) error {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = f.b.cfg.NodeID
	req.MaxWaitMillis = int32(waitMax.Milliseconds())
	req.MinBytes = max(f.b.cfg.ReplicaFetchMinBytes, 1)
	req.MaxBytes = f.b.cfg.ReplicaFetchResponseMaxBytes
	req.ClusterID = kmsg.StringPtr(f.b.Image().ClusterID())
	index := map[string]map[int32]fetchWork{}
	want := make([]fetchsession.Partition, 0, len(work))
	for _, w := range work {
		if index[w.p.topic] == nil {
			index[w.p.topic] = map[int32]fetchWork{}
		}
		index[w.p.topic][w.p.index] = w
		fp := fetchsession.Partition{
			Key:                fetchsession.Key{Name: w.p.topic, Partition: w.p.index},
			FetchOffset:        w.p.log.LogEndOffset(),
			LogStartOffset:     w.p.log.LogStartOffset(),
			MaxBytes:           f.b.cfg.ReplicaFetchMaxBytes,
			CurrentLeaderEpoch: w.st.epoch,
			LastFetchedEpoch:   -1,
		}
		if latest, ok := w.p.log.Epochs().Latest(); ok {
			fp.LastFetchedEpoch = latest
		}
		want = append(want, fp)
	}
	// Within a session only the partitions whose fetch state changed are
	// sent; the leader answers only those with news.
	fetchsession.FillRequest(req, f.session.Build(want))
	resp, err := conn.Request(ctx, req)
	if err != nil {
		f.session.Reset() // the leader may have taken the epoch
		select {
		case <-conn.Done():
			// The connection broke under a pending fetch: the leader's
			// process most likely died.
			return fmt.Errorf("%w: %v", errLeaderUnreachable, err)
		default:
			return err
		}
	}
	r := resp.(*kmsg.FetchResponse)
	f.session.Answered(r.ErrorCode, r.SessionID)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	for _, t := range r.Topics {
		for _, rp := range t.Partitions {
			w, ok := index[t.Topic][rp.Partition]
			if !ok {
				continue
			}
			f.handlePartition(w, rp)
		}
	}
	return nil
}

func (f *replicaFetcher) handlePartition(w fetchWork, rp kmsg.FetchResponseTopicPartition) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if w.p.log.LogEndOffset() < rp.LogStartOffset {
			// The leader deleted what we would fetch next (retention):
			// start over at its log start.
			if err := w.p.restartAt(rp.LogStartOffset); err != nil {
				f.b.log.Error("cannot restart follower log", "partition", w.p.name(), "err", err)
			}
		} else {
			f.mu.Lock()
			if st, ok := f.parts[w.p]; ok {
				st.truncate = true
			}
			f.mu.Unlock()
		}
		return
	case errors.Is(err, kerr.UnknownLeaderEpoch):
		return // the leader has not applied the new epoch yet: retry
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, unknown partition:
		// wait for the metadata that explains it.
		f.pause(w.p, w.st.epoch)
		return
	}
	if rp.DivergingEpoch.EndOffset >= 0 { // absent: -1
		// Our tail diverges from the leader's: reconcile (truncate) before
		// fetching again.
		f.mu.Lock()
		if st, ok := f.parts[w.p]; ok {
			st.truncate = true
		}
		f.mu.Unlock()
		return
	}
	if err := w.p.appendFromLeader(rp.RecordBatches, rp.HighWatermark, w.st.epoch); err != nil {
		if !errors.Is(err, errBelowFloor) { // logged once by checkFreeSpace
			f.b.log.Error("follower append failed", "partition", w.p.name(), "err", err)
		}
		f.pause(w.p, w.st.epoch)
		return
	}
	f.b.metrics.AddReplicationBytesIn(int64(len(rp.RecordBatches)))
}

// --- the follower side of a partition ---

// following reports the leader and epoch this replica follows.
func (p *partition) following() (leader, epoch int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.role != metadata.RoleFollower {
		return 0, 0, false
	}
	return p.state.Leader, p.state.LeaderEpoch, true
}

// appendFromLeader appends batches fetched from the leader, keeping their
// offsets and epochs, makes them durable before the next fetch reports
// them, and follows the leader's high watermark.
func (p *partition) appendFromLeader(data []byte, leaderHW int64, epoch int32) error {
	if len(data) > 0 {
		if err := p.b.checkFreeSpace(partitionLogDir(p)); err != nil {
			return err
		}
	}
	now := time.Now().UnixMilli()
	p.mu.Lock()
	if p.closed || p.role != metadata.RoleFollower || p.state.LeaderEpoch != epoch {
		p.mu.Unlock()
		return nil // the role changed while the fetch was in flight
	}
	if p.failed != nil {
		p.mu.Unlock()
		return p.failed
	}
	appended := false
	err := batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < p.log.LogEndOffset() {
			return nil // already have it
		}
		if _, err := p.log.AppendReplica(b, now); err != nil {
			if isDiskFailure(err) {
				p.b.logDirFailed(p, err)
			}
			return err
		}
		p.producers.Apply(h)
		appended = true
		return nil
	})
	writeCaching := p.cfg.WriteCaching
	p.mu.Unlock()
	var appendErr error
	if err != nil && !errors.Is(err, batch.ErrTruncated) {
		// A partial trailing batch is normal (fetch size limit); anything
		// else is a corrupt transfer or a local disk problem. The batches
		// appended before it are still synced below: the next fetch
		// reports the log end as held durably, and the leader would
		// count unsynced batches towards acks=all (found by internal/sim).
		appendErr = fmt.Errorf("append from leader: %w", err)
	}
	var durable int64
	if appended && !writeCaching {
		start := time.Now()
		d, err := p.log.Sync()
		p.b.metrics.ObserveFsync(time.Since(start))
		if err != nil {
			p.mu.Lock()
			p.failLocked(err)
			p.mu.Unlock()
			return err
		}
		durable = d
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if writeCaching {
		p.durableEnd = p.log.LogEndOffset()
	} else if durable > p.durableEnd {
		p.durableEnd = durable
	}
	if p.leader != nil {
		// This replica became leader while the fsync ran (a controlled
		// shutdown moves leadership to a follower mid-fetch): its leader
		// state started from the durable end before this fsync. Tell it,
		// or the HW waits for an fsync that only a new append would
		// bring, and a producer retrying a batch already in the log
		// never gets its acks=all answer.
		if _, err := p.leader.OnLocalDurable(p.durableEnd); err != nil {
			p.b.log.Error("replication state refused a durable end", "partition", p.name(), "err", err)
		}
		p.progressLocked()
		return appendErr
	}
	if hw := min(leaderHW, p.durableEnd); hw > p.highWatermark.Load() {
		p.highWatermark.Store(hw)
	}
	return appendErr
}

// truncateTo removes the local log from offset on (a divergent tail) and
// rebuilds the producer state from what remains.
func (p *partition) truncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != nil {
		return errors.New("a leader never truncates its log")
	}
	before := p.log.LogEndOffset()
	if err := p.log.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", p.name(), offset, err)
	}
	if offset >= before {
		// No record cut; Truncate only dropped an epoch that starts here
		// and holds nothing (one this broker led without writing): a
		// leader that never had it answers every fetch naming it as
		// diverging at this very offset, so it must go (Kafka's
		// UnifiedLog.truncateTo does the same).
		return nil
	}
	p.b.log.Info("truncated divergent log tail", "partition", p.name(), "from", before, "to", p.log.LogEndOffset())
	p.durableEnd = min(p.durableEnd, p.log.LogEndOffset())
	if hw := p.highWatermark.Load(); hw > p.log.LogEndOffset() {
		p.highWatermark.Store(p.log.LogEndOffset())
	}
	return p.rebuildProducerStateLocked()
}

// restartAt empties the local log and starts it at offset, when the
// leader no longer has what this replica would fetch next.
func (p *partition) restartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.durableEnd = offset
	p.highWatermark.Store(offset)
	return p.rebuildProducerStateLocked()
}

// endpointOf is a broker's host:port on a listener.
func endpointOf(br *metadata.Broker, listener string) (string, bool) {
	for _, ep := range br.Endpoints {
		if ep.Listener == listener {
			return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), true
		}
	}
	return "", false
}

// suspectFor bounds how long a broker is reported unavailable on the word
// of a broken replication connection alone: long enough for the controller
// to fence a dead broker, short enough that a live one behind a blip is not
// shunned for long.
const suspectFor = 3 * time.Second

func (b *Broker) suspect(id int32) {
	if _, known := b.suspects.Load(id); !known {
		b.log.Info("lost the replication connection to a leader; reporting its partitions unavailable until the controller decides", "broker", id)
	}
	b.suspects.Store(id, time.Now().Add(suspectFor))
}

func (b *Broker) clearSuspect(id int32) { b.suspects.Delete(id) }

func (b *Broker) isSuspect(id int32) bool {
	v, ok := b.suspects.Load(id)
	if !ok {
		return false
	}
	if time.Now().After(v.(time.Time)) {
		b.suspects.Delete(id)
		return false
	}
	if br, ok := b.Image().Broker(id); ok && br.Fenced {
		return false // the controller decided; the image speaks for itself
	}
	return true
}

// settleWait bounds how long a Metadata answer waits for the controller to
// rule on a suspect broker: enough for a raft election plus a fencing
// commit when the controller itself died.
const settleWait = 2 * time.Second

// settleSuspects waits until no broker is suspect (each was fenced, came
// back, or its suspicion expired), or settleWait passes.
func (b *Broker) settleSuspects() {
	anySuspect := func(*metadata.Image) bool {
		found := false
		b.suspects.Range(func(k, _ any) bool {
			if b.isSuspect(k.(int32)) {
				found = true
				return false
			}
			return true
		})
		return found
	}
	if !anySuspect(nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	defer cancel()
	b.waitImage(ctx, func(im *metadata.Image) bool { return !anySuspect(im) })
}
