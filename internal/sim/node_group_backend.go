package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
)

// groupBackend is api.GroupBackend for a simulated process, as
// internal/node's groups_backend.go: each request goes to the coordinator
// of its group's partition.
type groupBackend struct{ p *process }

var _ api.GroupBackend = groupBackend{}

func (x backend) Groups() api.GroupBackend { return groupBackend(x) }

// EnsureOffsetsTopic: the harness creates __consumer_offsets with the data
// topic (cluster.go ensureTopic); until this node's image has it, clients
// get COORDINATOR_NOT_AVAILABLE and retry, as from a broker whose
// creation is still in flight.
func (g groupBackend) EnsureOffsetsTopic(done func(error)) {
	if _, ok := g.p.image.Topic(offsetsTopic); ok {
		done(nil)
		return
	}
	done(kerr.CoordinatorNotAvailable)
}

// coordinatorFor is groupRuntime.coordinatorFor.
func (p *process) coordinatorFor(groupID string) (*coordinator, error) {
	t, ok := p.image.Topic(offsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, kerr.NotCoordinator
	}
	idx := group.PartitionFor(groupID, int32(len(t.Partitions)))
	if r := p.parts[partKey{t.ID, idx}]; r != nil && r.coord != nil {
		return r.coord, nil
	}
	if t.Partitions[idx].Leader == p.n.id {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return nil, kerr.NotCoordinator
}

func (g groupBackend) Join(req group.JoinRequest, done func(group.JoinResponse)) {
	gc, err := g.p.coordinatorFor(req.GroupID)
	if err != nil {
		done(group.JoinResponse{Err: err, MemberID: req.MemberID, Generation: -1})
		return
	}
	gc.call(func(c *group.Coordinator, now int64) group.Output {
		req.ID = gc.parked.Join(req.MemberID, done)
		return c.Join(now, req)
	}, nil)
}

func (g groupBackend) Sync(req group.SyncRequest, done func(group.SyncResponse)) {
	gc, err := g.p.coordinatorFor(req.GroupID)
	if err != nil {
		done(group.SyncResponse{Err: err})
		return
	}
	gc.call(func(c *group.Coordinator, now int64) group.Output {
		req.ID = gc.parked.Sync(done)
		return c.Sync(now, req)
	}, nil)
}

func (g groupBackend) Heartbeat(req group.HeartbeatRequest) error {
	gc, err := g.p.coordinatorFor(req.GroupID)
	if err != nil {
		return err
	}
	var hbErr error
	gc.call(func(c *group.Coordinator, now int64) group.Output {
		hbErr = c.Heartbeat(now, req)
		return group.Output{}
	}, nil)
	return hbErr
}

func (g groupBackend) Leave(req group.LeaveRequest, done func(group.LeaveResponse)) {
	gc, err := g.p.coordinatorFor(req.GroupID)
	if err != nil {
		done(group.LeaveResponse{Err: err})
		return
	}
	var resp group.LeaveResponse
	gc.call(func(c *group.Coordinator, now int64) group.Output {
		var out group.Output
		resp, out = c.Leave(now, req)
		return out
	}, func(err error) {
		if err != nil {
			resp = group.LeaveResponse{Err: err}
		}
		done(resp)
	})
}

func (g groupBackend) CommitOffsets(req group.CommitRequest, done func([]group.PartitionError, error)) {
	gc, err := g.p.coordinatorFor(req.GroupID)
	if err != nil {
		done(nil, err)
		return
	}
	var results []group.PartitionError
	err = gc.write(func(c *group.Coordinator, now int64) group.Output {
		var out group.Output
		results, out = c.CommitOffsets(now, req)
		return out
	}, func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(results, nil)
	})
	if err != nil {
		done(nil, err)
	}
}

func (g groupBackend) FetchOffsets(groupID string, partitions []group.TopicPartition, done func([]group.FetchedOffset, error)) {
	gc, err := g.p.coordinatorFor(groupID)
	if err != nil {
		done(nil, err)
		return
	}
	var fetched []group.FetchedOffset
	gc.call(func(c *group.Coordinator, _ int64) group.Output {
		fetched = c.FetchOffsets(groupID, partitions)
		return group.Output{}
	}, func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		g.p.n.c.check.groupServed(gc, groupID, fetched)
		done(fetched, nil)
	})
}

func (g groupBackend) DescribeGroup(groupID string) (group.GroupDescription, error) {
	gc, err := g.p.coordinatorFor(groupID)
	if err != nil {
		return group.GroupDescription{GroupID: groupID, State: group.Dead}, err
	}
	return gc.c.DescribeGroup(groupID), nil
}

func (g groupBackend) ListGroups(states []group.State) ([]group.GroupListing, error) {
	var out []group.GroupListing
	var loadErr error
	t, ok := g.p.image.Topic(offsetsTopic)
	if !ok {
		return nil, nil
	}
	for _, st := range t.Partitions {
		r := g.p.parts[partKey{t.ID, st.Index}]
		switch {
		case r != nil && r.coord != nil:
			out = append(out, r.coord.c.ListGroups(states)...)
		case st.Leader == g.p.n.id:
			loadErr = kerr.CoordinatorLoadInProgress
		}
	}
	return out, loadErr
}

func (g groupBackend) DeleteGroups(groupIDs []string, done func([]error)) {
	errs := make([]error, len(groupIDs))
	pending := 1
	finish := func() {
		if pending--; pending == 0 {
			done(errs)
		}
	}
	for i, id := range groupIDs {
		if id == "" {
			errs[i] = kerr.InvalidGroupID
			continue
		}
		gc, err := g.p.coordinatorFor(id)
		if err != nil {
			errs[i] = err
			continue
		}
		var results []error
		pending++
		err = gc.write(func(c *group.Coordinator, _ int64) group.Output {
			var out group.Output
			results, out = c.DeleteGroups([]string{id})
			return out
		}, func(err error) {
			if err == nil {
				err = results[0]
			}
			errs[i] = err
			finish()
		})
		if err != nil {
			errs[i] = err
			finish()
		}
	}
	finish()
}

func (g groupBackend) DeleteOffsets(groupID string, partitions []group.TopicPartition, done func(group.DeleteOffsetsResponse)) {
	gc, err := g.p.coordinatorFor(groupID)
	if err != nil {
		done(group.DeleteOffsetsResponse{Err: err})
		return
	}
	var resp group.DeleteOffsetsResponse
	err = gc.write(func(c *group.Coordinator, _ int64) group.Output {
		var out group.Output
		resp, out = c.DeleteOffsets(groupID, partitions)
		return out
	}, func(err error) {
		if err != nil {
			resp = group.DeleteOffsetsResponse{Err: err}
		}
		done(resp)
	})
	if err != nil {
		done(group.DeleteOffsetsResponse{Err: err})
	}
}
