package node

import (
	"fmt"
	"strconv"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// txnRuntime runs one transaction coordinator (txnhost.Host) for every
// __transaction_state partition this broker leads (coordinatorSet), and
// delivers the coordinators' markers to partition leaders over one kept
// connection per leader; as a partition leader it verifies transactional
// produces with their coordinators (KIP-890 part 1, txn_verify.go).
type txnRuntime struct {
	coordinatorSet[*txnCoordinator]
	cfg   txn.Config
	topic *internalTopic

	markerConns *peerConns
	verifier    *txnVerifier
}

func newTxnRuntime(b *Broker) *txnRuntime {
	rt := &txnRuntime{cfg: txnConfig(b), markerConns: newPeerConns(b, fmt.Sprintf("skein-txn-markers-%d", b.cfg.NodeID))}
	rt.verifier = newTxnVerifier(b)
	rt.coordinatorSet = newCoordinatorSet(b, api.TransactionStateTopic, func(p *partition, epoch int32) *txnCoordinator {
		return newTxnCoordinator(rt, p, epoch)
	})
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

// stopAll stops every coordinator and closes the marker connections: the
// broker is stopping.
func (rt *txnRuntime) stopAll() {
	rt.coordinatorSet.stopAll()
	rt.markerConns.closeAll()
	rt.verifier.conns.closeAll()
}

var _ txnhost.Hosts = (*txnRuntime)(nil)

// For is txnhost.Hosts': the coordinator of a transactional id here.
func (rt *txnRuntime) For(id string) (txnhost.Handle, error) {
	tc, err := rt.lookup(id)
	if err != nil {
		return nil, err
	}
	return tc, nil
}

// All is txnhost.Hosts'.
func (rt *txnRuntime) All() ([]txnhost.Handle, error) {
	var out []txnhost.Handle
	for _, tc := range rt.all() {
		out = append(out, tc)
	}
	return out, nil
}

// txnWriteTimeout bounds the wait for a state record to be committed.
const txnWriteTimeout = 5 * time.Second
