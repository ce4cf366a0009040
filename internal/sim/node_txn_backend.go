package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// txnHosts finds a simulated process's transaction coordinators for the
// shared txnhost.Backend, as internal/node's txnRuntime does.
type txnHosts struct{ p *process }

var _ txnhost.Hosts = txnHosts{}

func (x backend) Txns() api.TxnBackend {
	return txnhost.Backend{Hosts: txnHosts(x), AllocateProducerID: x.p.allocateProducerID}
}

// EnsureTransactionTopic: the harness creates __transaction_state with
// the data topic; until this node's image has it, clients get
// COORDINATOR_NOT_AVAILABLE and retry.
func (x txnHosts) EnsureTransactionTopic(done func(error)) {
	if _, ok := x.p.image.Topic(txnStateTopic); ok {
		done(nil)
		return
	}
	done(kerr.CoordinatorNotAvailable)
}

func (x txnHosts) For(id string) (txnhost.Handle, error) {
	t, ok := x.p.image.Topic(txnStateTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	idx := txn.PartitionFor(id, int32(len(t.Partitions)))
	if r := x.p.parts[partKey{t.ID, idx}]; r != nil && r.txnCoord != nil {
		return r.txnCoord, nil
	}
	if t.Partitions[idx].Leader == x.p.n.id {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return nil, kerr.NotCoordinator
}

func (x txnHosts) All() ([]txnhost.Handle, error) {
	t, ok := x.p.image.Topic(txnStateTopic)
	if !ok {
		return nil, nil
	}
	var out []txnhost.Handle
	var loadErr error
	for _, st := range t.Partitions {
		r := x.p.parts[partKey{t.ID, st.Index}]
		switch {
		case r != nil && r.txnCoord != nil:
			out = append(out, r.txnCoord)
		case st.Leader == x.p.n.id:
			loadErr = kerr.CoordinatorLoadInProgress
		}
	}
	return out, loadErr
}
