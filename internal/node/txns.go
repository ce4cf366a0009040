package node

import (
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/rpc"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// txnRuntime runs one transaction coordinator (txnhost.Host) for every
// __transaction_state partition this broker leads, following leadership
// after every metadata reconcile as groupRuntime does for
// __consumer_offsets, and delivers the coordinators' markers to partition
// leaders.
//
// Locking: reconcileMu makes reconciles one at a time; mu guards the
// coordinator map and the marker connections, and is never held while a
// coordinator's lock is taken, nor the other way round.
type txnRuntime struct {
	b     *Broker
	cfg   txn.Config
	topic *internalTopic

	reconcileMu sync.Mutex

	mu      sync.Mutex
	coords  map[int32]*txnCoordinator // by partition index
	conns   map[int32]*rpc.Conn       // marker connections, by leader
	stopped bool
}

func newTxnRuntime(b *Broker) *txnRuntime {
	rt := &txnRuntime{b: b, cfg: txnConfig(b), coords: map[int32]*txnCoordinator{}, conns: map[int32]*rpc.Conn{}}
	rt.topic = &internalTopic{b: b, name: api.TransactionStateTopic, request: rt.topicRequest}
	return rt
}

func txnConfig(b *Broker) txn.Config {
	c := txn.DefaultConfig()
	c.MaxTimeoutMs = int32(b.cfg.TransactionMaxTimeout.Milliseconds())
	c.ExpirationMs = b.cfg.TransactionalIDExpiration.Milliseconds()
	return c
}

// topicRequest is the creation of __transaction_state: the broker's
// transaction.state.log.* properties, compacted like Kafka's (the cleaner
// keeps the latest state of every transactional id), never deleted by
// retention, min.insync.replicas from transaction.state.log.min.isr (at
// most the replication factor, or it could never be written).
func (rt *txnRuntime) topicRequest() (int32, int16, map[string]string) {
	cfg := rt.b.cfg
	rf := rt.b.internalReplicationFactor("transaction.state.log.replication.factor", cfg.TransactionStateLogReplicationFactor)
	minISR := min(cfg.TransactionStateLogMinISR, int32(rf))
	return cfg.TransactionStateLogNumPartitions, rf, map[string]string{
		"cleanup.policy":      "compact",
		"retention.ms":        "-1",
		"retention.bytes":     "-1",
		"min.insync.replicas": strconv.Itoa(int(minISR)),
		"segment.bytes":       strconv.Itoa(int(cfg.TransactionStateLogSegmentBytes)),
	}
}

// Txns serves the transaction APIs through the shared adapter.
func (x backend) Txns() api.TxnBackend {
	return txnhost.Backend{Hosts: x.b.txns, AllocateProducerID: x.b.allocateProducerID}
}

// EnsureTransactionTopic is txnhost.Hosts'.
func (rt *txnRuntime) EnsureTransactionTopic(done func(error)) { rt.topic.ensure(done) }

// reconcile starts coordinators for the __transaction_state partitions
// this broker now leads and stops the others.
func (rt *txnRuntime) reconcile() {
	rt.reconcileMu.Lock()
	defer rt.reconcileMu.Unlock()
	type led struct {
		p     *partition
		epoch int32
	}
	want := map[int32]led{}
	if t, ok := rt.b.Image().Topic(api.TransactionStateTopic); ok {
		for _, pm := range t.Partitions {
			if p := rt.b.partition(t.ID, pm.Index); p != nil {
				if leading, epoch := p.leadership(); leading {
					want[pm.Index] = led{p, epoch}
				}
			}
		}
	}
	var stale, started []*txnCoordinator
	rt.mu.Lock()
	if rt.stopped {
		rt.mu.Unlock()
		return
	}
	for idx, tc := range rt.coords {
		if w, ok := want[idx]; ok && w.p == tc.part && w.epoch == tc.epoch && !tc.isStopped() {
			continue
		}
		delete(rt.coords, idx)
		stale = append(stale, tc)
	}
	for idx, w := range want {
		if _, ok := rt.coords[idx]; !ok {
			tc := newTxnCoordinator(rt, w.p, w.epoch)
			rt.coords[idx] = tc
			started = append(started, tc)
		}
	}
	rt.mu.Unlock()
	for _, tc := range stale {
		tc.stop("leadership moved")
	}
	for _, tc := range started {
		go tc.load()
	}
}

// stopAll unloads every coordinator and closes the marker connections:
// the broker is stopping.
func (rt *txnRuntime) stopAll() {
	rt.mu.Lock()
	rt.stopped = true
	coords, conns := rt.coords, rt.conns
	rt.coords, rt.conns = map[int32]*txnCoordinator{}, map[int32]*rpc.Conn{}
	rt.mu.Unlock()
	for _, tc := range coords {
		tc.stop("broker stopping")
	}
	for _, c := range conns {
		c.Close()
	}
}

var _ txnhost.Hosts = (*txnRuntime)(nil)

// For is txnhost.Hosts': the coordinator of a transactional id here.
func (rt *txnRuntime) For(id string) (txnhost.Handle, error) {
	t, ok := rt.b.Image().Topic(api.TransactionStateTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	idx := txn.PartitionFor(id, int32(len(t.Partitions)))
	rt.mu.Lock()
	tc := rt.coords[idx]
	rt.mu.Unlock()
	if tc != nil && tc.part.id == t.ID {
		return tc, nil
	}
	if t.Partitions[idx].Leader == rt.b.cfg.NodeID {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return nil, kerr.NotCoordinator
}

// All is txnhost.Hosts'.
func (rt *txnRuntime) All() ([]txnhost.Handle, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]txnhost.Handle, 0, len(rt.coords))
	for _, tc := range rt.coords {
		out = append(out, tc)
	}
	return out, nil
}

// replaceFailed drops a coordinator whose write failed and reloads the
// partition if this broker still leads it.
func (rt *txnRuntime) replaceFailed(tc *txnCoordinator) {
	rt.mu.Lock()
	if rt.coords[tc.part.index] == tc {
		delete(rt.coords, tc.part.index)
	}
	rt.mu.Unlock()
	rt.reconcile()
}

// txnWriteTimeout bounds the wait for a state record to be committed.
const txnWriteTimeout = 5 * time.Second
