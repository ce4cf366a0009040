package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/txnhost"
)

// txnHosts: the simulated node hosts no transaction coordinator yet (the
// harness creates no __transaction_state), so transactional requests are
// answered as by a broker whose topic cannot be created:
// COORDINATOR_NOT_AVAILABLE from FindCoordinator, NOT_COORDINATOR to the
// rest. The shared txnhost.Backend serves them all the same.
type txnHosts struct{ p *process }

var _ txnhost.Hosts = txnHosts{}

func (x backend) Txns() api.TxnBackend {
	return txnhost.Backend{Hosts: txnHosts(x), AllocateProducerID: x.p.allocateProducerID}
}

func (txnHosts) EnsureTransactionTopic(done func(error)) {
	done(fmt.Errorf("%w: the simulator runs no transaction coordinators", kerr.CoordinatorNotAvailable))
}

func (txnHosts) For(string) (txnhost.Handle, error) { return nil, kerr.NotCoordinator }

func (txnHosts) All() ([]txnhost.Handle, error) { return nil, nil }
