package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/grouphost"
)

// groupHosts finds a simulated process's coordinators for the shared
// grouphost.Backend, as internal/node's groupRuntime does.
type groupHosts struct{ p *process }

var _ grouphost.Hosts = groupHosts{}

func (x backend) Groups() api.GroupBackend {
	return grouphost.Backend{Hosts: groupHosts(x), Fetched: func(h grouphost.Handle, groupID string, fetched []group.FetchedOffset) {
		x.p.n.c.check.groupServed(h.(*coordinator), groupID, fetched)
	}}
}

// EnsureOffsetsTopic: the harness creates __consumer_offsets with the data
// topic (cluster.go ensureTopic); until this node's image has it, clients
// get COORDINATOR_NOT_AVAILABLE and retry, as from a broker whose
// creation is still in flight.
func (g groupHosts) EnsureOffsetsTopic(done func(error)) {
	if _, ok := g.p.image.Topic(offsetsTopic); ok {
		done(nil)
		return
	}
	done(kerr.CoordinatorNotAvailable)
}

func (g groupHosts) For(groupID string) (grouphost.Handle, error) {
	t, ok := g.p.image.Topic(offsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	idx := group.PartitionFor(groupID, int32(len(t.Partitions)))
	if r := g.p.parts[partKey{t.ID, idx}]; r != nil && r.coord != nil {
		return r.coord, nil
	}
	if t.Partitions[idx].Leader == g.p.n.id {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return nil, kerr.NotCoordinator
}

func (g groupHosts) ForPartition(partition int32) (grouphost.Handle, bool) {
	t, ok := g.p.image.Topic(offsetsTopic)
	if !ok {
		return nil, false
	}
	if r := g.p.parts[partKey{t.ID, partition}]; r != nil && r.coord != nil {
		return r.coord, true
	}
	return nil, false
}

func (g groupHosts) All() ([]grouphost.Handle, error) {
	t, ok := g.p.image.Topic(offsetsTopic)
	if !ok {
		return nil, nil
	}
	var out []grouphost.Handle
	var loadErr error
	for _, st := range t.Partitions {
		r := g.p.parts[partKey{t.ID, st.Index}]
		switch {
		case r != nil && r.coord != nil:
			out = append(out, r.coord)
		case st.Leader == g.p.n.id:
			loadErr = kerr.CoordinatorLoadInProgress
		}
	}
	return out, loadErr
}
