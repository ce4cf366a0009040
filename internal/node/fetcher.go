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

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replicafetch"
	"github.com/skein-log/skein/internal/rpc"
)

// fetchBackoff is the pause after a failed fetch or an unreachable leader.
const fetchBackoff = 100 * time.Millisecond

// maxTruncationRounds bounds the OffsetForLeaderEpoch exchanges of one
// reconciliation (KIP-279 may need several).
const maxTruncationRounds = 16

// pauseAfterRefusal is how long a refused partition waits before the
// fetcher tries it again.
const pauseAfterRefusal = 200 * time.Millisecond

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

// update assigns every partition this broker follows to the fetcher of
// its leader. Called after each reconcile.
func (m *fetcherManager) update() {
	want := map[int32][]replicafetch.Assignment[*partition]{}
	for _, p := range m.b.partitionList() {
		leader, epoch, ok := p.following()
		if !ok {
			continue
		}
		want[leader] = append(want[leader], replicafetch.Assignment[*partition]{P: p, Topic: p.topic, Partition: p.index, Epoch: epoch})
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

// checkLeaderConns makes a suspect of every leader whose replication
// connection the peer has closed, as the kernel knows it now: a Metadata
// answer checks first, because a client that saw the leader's connection
// break asks for metadata within a millisecond or two, which may be before
// the fetcher's own reader has noticed the same thing.
func (m *fetcherManager) checkLeaderConns() {
	m.mu.Lock()
	var gone []int32
	for id, f := range m.fetchers {
		if c := f.current.Load(); c != nil && c.PeerClosed() {
			gone = append(gone, id)
		}
	}
	m.mu.Unlock()
	for _, id := range gone {
		m.b.suspect(id)
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

// replicaFetcher runs the replicafetch.Session of one leader on a
// goroutine with an RPC connection: it sends what the session asks for,
// carries out the actions its answers lead to (truncate, restart, append
// and fsync) and only then asks again.
type replicaFetcher struct {
	b      *Broker
	leader int32

	mu   sync.Mutex // guards sess
	sess *replicafetch.Session[*partition]
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once
	conn *rpc.Conn
	// current is conn, for checkLeaderConns on other goroutines.
	current atomic.Pointer[rpc.Conn]
	// roundMu is held for each exchange and its actions, so a pause can
	// wait for the one in flight to end.
	roundMu sync.Mutex
	// stopCtx ends with shutdown: a stopping fetcher does not wait for
	// the answer to its fetch in flight (a leader that is stopping too
	// may take the whole request timeout).
	stopCtx    context.Context
	cancelStop context.CancelFunc
}

func newReplicaFetcher(b *Broker, leader int32) *replicaFetcher {
	cfg := replicafetch.Config{
		ReplicaID:           b.cfg.NodeID,
		MaxWait:             max(b.cfg.ReplicaFetchWaitMax, 10*time.Millisecond),
		MinBytes:            b.cfg.ReplicaFetchMinBytes,
		MaxBytes:            b.cfg.ReplicaFetchResponseMaxBytes,
		PartitionMaxBytes:   b.cfg.ReplicaFetchMaxBytes,
		RefusalPause:        pauseAfterRefusal,
		MaxTruncationRounds: maxTruncationRounds,
	}
	stopCtx, cancelStop := context.WithCancel(context.Background())
	return &replicaFetcher{b: b, leader: leader, sess: replicafetch.New[*partition](cfg),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		stopCtx: stopCtx, cancelStop: cancelStop}
}

// sessionStart anchors the sessions' clock: only differences matter, and
// time.Since reads the monotonic clock, which wall-clock steps do not move.
var sessionStart = time.Now()

func sessionNow() time.Duration { return time.Since(sessionStart) }

func (f *replicaFetcher) assign(parts []replicafetch.Assignment[*partition]) {
	f.mu.Lock()
	f.sess.Assign(parts)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *replicaFetcher) shutdown() {
	f.once.Do(func() {
		close(f.stop)
		f.cancelStop()
	})
}

// sleep waits d, or until woken or stopped; false when stopped.
func (f *replicaFetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-f.wake:
	case <-t.C:
	}
	return true
}

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
		ctx, cancel := context.WithTimeout(f.stopCtx, f.sess.Config().MaxWait+controllerRPCTimeout)
		// Connected before the session builds a request: a new
		// connection restarts the fetch session, and the request must
		// be built for it.
		conn, err := f.connect(ctx)
		if err != nil {
			cancel()
			f.roundMu.Unlock()
			f.b.suspect(f.leader)
			f.b.logger(loggerReplicaFetcher).Debug("replica fetcher cannot reach the leader", "leader", f.leader, "err", err)
			if !f.sleep(fetchBackoff) {
				return
			}
			continue
		}
		f.mu.Lock()
		hold, holdWait := f.followerHold()
		step := f.sess.NextHolding(sessionNow(), f.b.Image().ClusterID(), hold, holdWait)
		f.mu.Unlock()
		for _, v := range step.Violations {
			f.b.logger(loggerReplicaFetcher).Error("replica fetcher invariant", "leader", f.leader, "problem", v)
		}
		if step.Request == nil {
			cancel()
			f.roundMu.Unlock()
			if !f.sleep(step.Wait) {
				return
			}
			continue
		}
		resp, release, err := f.exchange(ctx, conn, step.Request)
		cancel()
		f.mu.Lock()
		rd := f.sess.Answer(sessionNow(), resp, err)
		f.mu.Unlock()
		f.carryOut(rd)
		// The appends copied the batches into the logs; nothing of
		// the answer is used after this.
		release()
		f.roundMu.Unlock()
		if rd.Backoff {
			f.b.logger(loggerReplicaFetcher).Debug("replica fetch failed", "leader", f.leader, "err", rd.Err)
			if !f.sleep(fetchBackoff) {
				return
			}
		}
	}
}

// exchange sends one request to the leader. A leader that cannot be
// reached, or whose connection breaks under a pending request (its
// process most likely died), becomes a suspect; one that answers is
// cleared.
// The answer's frame goes back to the buffer pool with release (never nil).
func (f *replicaFetcher) exchange(ctx context.Context, conn *rpc.Conn, req kmsg.Request) (kmsg.Response, func(), error) {
	resp, release, err := conn.RequestPooled(ctx, req)
	if err != nil {
		select {
		case <-conn.Done():
			f.b.suspect(f.leader)
		default:
		}
		return nil, release, err
	}
	f.b.clearSuspect(f.leader)
	return resp, release, nil
}

// followerHold is the follower's replication throttle for the next fetch:
// nil when its quota is not spent, else which partitions to leave out and
// how long until the quota allows a fetch again.
func (f *replicaFetcher) followerHold() (func(*partition) bool, time.Duration) {
	im := f.b.Image()
	spent, wait := f.b.throttle.followerHold(im, time.Now())
	if !spent {
		return nil, 0
	}
	return func(p *partition) bool { return f.b.throttle.followerThrottled(im, p.id, p.index) }, wait
}

// carryOut does what an answer led to, on the partitions' follower side.
func (f *replicaFetcher) carryOut(rd replicafetch.Ready[*partition]) {
	for _, v := range rd.Violations {
		f.b.logger(loggerReplicaFetcher).Error("replica fetcher invariant", "leader", f.leader, "problem", v)
	}
	for _, w := range rd.Warnings {
		f.b.logger(loggerReplicaFetcher).Debug("log reconciliation with leader", "leader", f.leader, "detail", w)
	}
	for i, a := range rd.Actions {
		// A stopping broker leaves the rest undone: each action is a
		// step a crash could have cut short too (the next start fetches
		// and truncates again), and after its leaderships moved a broker
		// of thousands of partitions has as many truncations to carry
		// out, each with its fsyncs, one after another.
		select {
		case <-f.stop:
			f.b.log.Debug("replica fetcher stopping; actions left undone", "leader", f.leader, "left", len(rd.Actions)-i)
			return
		default:
		}
		err := replicafetch.Do(a)
		if err == nil && a.Kind == replicafetch.Append {
			f.b.metrics.AddReplicationBytesIn(int64(len(a.Batches)))
			if f.b.throttle.followerThrottled(f.b.Image(), a.P.id, a.P.index) {
				f.b.throttle.followerTook(len(a.Batches), time.Now())
			}
		}
		if err != nil {
			if !errors.Is(err, errBelowFloor) { // logged once by checkFreeSpace
				f.b.logger(loggerReplicaFetcher).Error("replica fetcher action failed", "partition", a.P.name(), "action", a.Kind, "err", err)
			}
			f.mu.Lock()
			f.sess.Failed(sessionNow(), a)
			f.mu.Unlock()
		}
	}
}

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
	conn, err := dialCluster(ctx, f.b.cfg, f.b.cfg.OutboundBindAddress, f.b.cfg.InterBrokerListenerName, ep, fmt.Sprintf("skein-replica-%d", f.b.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	f.conn = conn
	f.current.Store(conn)
	f.mu.Lock()
	f.sess.NewConnection()
	f.mu.Unlock()
	return conn, nil
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
