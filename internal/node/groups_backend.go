package node

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/group"
)

// groupBackend adapts the group runtime to api.GroupBackend: it routes each
// request to the coordinator of its group's partition.
type groupBackend struct{ rt *groupRuntime }

var _ api.GroupBackend = groupBackend{}

func (x backend) Groups() api.GroupBackend { return groupBackend{x.b.groups} }

func (g groupBackend) Join(req group.JoinRequest, done func(group.JoinResponse)) {
	fail := func(err error) { done(group.JoinResponse{Err: err, MemberID: req.MemberID, Generation: -1}) }
	gc, err := g.rt.coordinatorFor(req.GroupID)
	if err != nil {
		fail(err)
		return
	}
	err = gc.call(func(c *group.Coordinator, now int64) group.Output {
		req.ID = gc.parked.Join(req.MemberID, done)
		return c.Join(now, req)
	}, nil)
	if err != nil {
		fail(err)
	}
}

func (g groupBackend) Sync(req group.SyncRequest, done func(group.SyncResponse)) {
	gc, err := g.rt.coordinatorFor(req.GroupID)
	if err != nil {
		done(group.SyncResponse{Err: err})
		return
	}
	err = gc.call(func(c *group.Coordinator, now int64) group.Output {
		req.ID = gc.parked.Sync(done)
		return c.Sync(now, req)
	}, nil)
	if err != nil {
		done(group.SyncResponse{Err: err})
	}
}

func (g groupBackend) Heartbeat(req group.HeartbeatRequest) error {
	gc, err := g.rt.coordinatorFor(req.GroupID)
	if err != nil {
		return err
	}
	var hbErr error
	if err := gc.call(func(c *group.Coordinator, now int64) group.Output {
		hbErr = c.Heartbeat(now, req)
		return group.Output{}
	}, nil); err != nil {
		return err
	}
	return hbErr
}

func (g groupBackend) Leave(req group.LeaveRequest, done func(group.LeaveResponse)) {
	gc, err := g.rt.coordinatorFor(req.GroupID)
	if err != nil {
		done(group.LeaveResponse{Err: err})
		return
	}
	var resp group.LeaveResponse
	err = gc.call(func(c *group.Coordinator, now int64) group.Output {
		var out group.Output
		resp, out = c.Leave(now, req)
		return out
	}, func(err error) {
		if err != nil {
			resp = group.LeaveResponse{Err: err}
		}
		done(resp)
	})
	if err != nil {
		done(group.LeaveResponse{Err: err})
	}
}

func (g groupBackend) CommitOffsets(req group.CommitRequest, done func([]group.PartitionError, error)) {
	gc, err := g.rt.coordinatorFor(req.GroupID)
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
	gc, err := g.rt.coordinatorFor(groupID)
	if err != nil {
		done(nil, err)
		return
	}
	var fetched []group.FetchedOffset
	err = gc.call(func(c *group.Coordinator, _ int64) group.Output {
		fetched = c.FetchOffsets(groupID, partitions)
		return group.Output{}
	}, func(err error) {
		if err != nil {
			done(nil, err)
			return
		}
		done(fetched, nil)
	})
	if err != nil {
		done(nil, err)
	}
}

func (g groupBackend) DescribeGroup(groupID string) (group.GroupDescription, error) {
	gc, err := g.rt.coordinatorFor(groupID)
	if err != nil {
		return group.GroupDescription{GroupID: groupID, State: group.Dead}, err
	}
	var d group.GroupDescription
	err = gc.read(func(c *group.Coordinator) { d = c.DescribeGroup(groupID) })
	return d, err
}

func (g groupBackend) ListGroups(states []group.State) ([]group.GroupListing, error) {
	var out []group.GroupListing
	var loadErr error
	for _, gc := range g.rt.all() {
		if err := gc.read(func(c *group.Coordinator) { out = append(out, c.ListGroups(states)...) }); errors.Is(err, kerr.CoordinatorLoadInProgress) {
			loadErr = err
		}
	}
	return out, loadErr
}

func (g groupBackend) DeleteGroups(groupIDs []string, done func([]error)) {
	errs := make([]error, len(groupIDs))
	// Group the ids by coordinator; each coordinator deletes its share in
	// one call, and the answer goes out when every share is committed.
	byCoord := map[*groupCoordinator][]int{}
	for i, id := range groupIDs {
		if id == "" {
			errs[i] = kerr.InvalidGroupID
			continue
		}
		gc, err := g.rt.coordinatorFor(id)
		if err != nil {
			errs[i] = err
			continue
		}
		byCoord[gc] = append(byCoord[gc], i)
	}
	pending := newCountdown(len(byCoord), func() { done(errs) })
	for gc, idx := range byCoord {
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = groupIDs[i]
		}
		var results []error
		err := gc.write(func(c *group.Coordinator, now int64) group.Output {
			var out group.Output
			results, out = c.DeleteGroups(ids)
			return out
		}, func(err error) {
			for j, i := range idx {
				if err != nil {
					errs[i] = err
				} else {
					errs[i] = results[j]
				}
			}
			pending.done()
		})
		if err != nil {
			for _, i := range idx {
				errs[i] = err
			}
			pending.done()
		}
	}
}

func (g groupBackend) DeleteOffsets(groupID string, partitions []group.TopicPartition, done func(group.DeleteOffsetsResponse)) {
	gc, err := g.rt.coordinatorFor(groupID)
	if err != nil {
		done(group.DeleteOffsetsResponse{Err: err})
		return
	}
	var resp group.DeleteOffsetsResponse
	err = gc.write(func(c *group.Coordinator, now int64) group.Output {
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

func (g groupBackend) EnsureOffsetsTopic(done func(error)) {
	g.rt.ensureOffsetsTopic(done)
}

// ensureOffsetsTopic creates __consumer_offsets once, however many
// FindCoordinator requests ask at the same time.
func (rt *groupRuntime) ensureOffsetsTopic(done func(error)) {
	if _, ok := rt.b.Image().Topic(api.OffsetsTopic); ok {
		done(nil)
		return
	}
	rt.mu.Lock()
	rt.createWaiters = append(rt.createWaiters, done)
	first := len(rt.createWaiters) == 1
	rt.mu.Unlock()
	if !first {
		return
	}
	go func() {
		err := rt.createOffsetsTopic()
		rt.mu.Lock()
		waiters := rt.createWaiters
		rt.createWaiters = nil
		rt.mu.Unlock()
		for _, w := range waiters {
			w(err)
		}
	}()
}

// createOffsetsTopic sends the creation through the same path as a
// client's CreateTopics: decided by the active controller (forwarded to
// it from other brokers), answered once this broker's image has the topic.
func (rt *groupRuntime) createOffsetsTopic() error {
	partitions, rf, configs := rt.offsetsTopicRequest()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = int32(commitTimeout.Milliseconds())
	rt1 := kmsg.NewCreateTopicsRequestTopic()
	rt1.Topic, rt1.NumPartitions, rt1.ReplicationFactor = api.OffsetsTopic, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt1.Configs = append(rt1.Configs, c)
	}
	req.Topics = append(req.Topics, rt1)
	answer := make(chan kmsg.Response, 1)
	rt.b.api.Serve(&api.Request{Version: 7, ClientID: "skein-group-coordinator", Body: req}, func(r kmsg.Response) { answer <- r })
	resp := (<-answer).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return fmt.Errorf("%w: creating %s: %d topics in the answer", kerr.CoordinatorNotAvailable, api.OffsetsTopic, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case err == nil:
		rt.b.log.Info("created the offsets topic", "topic", api.OffsetsTopic, "partitions", partitions, "replication_factor", rf)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	default:
		why := err.Error()
		if t.ErrorMessage != nil {
			why = *t.ErrorMessage
		}
		// Kafka answers COORDINATOR_NOT_AVAILABLE until enough brokers
		// are alive for offsets.topic.replication.factor.
		return fmt.Errorf("%w: creating %s: %s", kerr.CoordinatorNotAvailable, api.OffsetsTopic, why)
	}
}
