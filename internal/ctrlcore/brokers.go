package ctrlcore

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// Register decides a BrokerRegistration (controller.RegisterBroker: the
// previous incarnation is fenced first, and the broker leaves the ELRs its
// restart may have cost it). Once committed, the connection it came on
// carries the broker's session until a heartbeat names another: a broker
// that dies right after registering is noticed as fast as one that
// heartbeated.
func (c *Core) Register(now time.Time, im *metadata.Image, req *kmsg.BrokerRegistrationRequest, conn api.ConnID, done func(int64, error)) Ready {
	c.begin(now)
	if c.active && req.ClusterID != im.ClusterID() {
		c.rd.Answers = append(c.rd.Answers, func() {
			done(-1, fmt.Errorf("%w: broker %d is in cluster %q, this is %q", kerr.InconsistentClusterID, req.BrokerID, req.ClusterID, im.ClusterID()))
		})
		return c.end()
	}
	reg := controller.Registration{ID: req.BrokerID, PreviousBrokerEpoch: req.PreviousBrokerEpoch}
	reg.ReplicaCapacity, reg.OpenFilesLimit = api.TaggedReplicaCapacity(req.UnknownTags)
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	for _, d := range req.LogDirs {
		reg.LogDirs = append(reg.LogDirs, metadata.DirectoryID(d))
	}
	epoch := int64(-1)
	c.enqueue(im, decision{what: fmt.Sprintf("registration of broker %d", reg.ID),
		decide: func(im *metadata.Image) ([]metadata.Record, error) {
			recs, e, err := controller.RegisterBroker(im, reg, c.writeCaching, c.unclean)
			epoch = e
			if err == nil && im.Fresh() && c.cfg.BootstrapTransactionVersion > 0 {
				// A new cluster's first registration: its feature levels,
				// as Kafka's storage tool writes them when formatting.
				recs = append(recs, metadata.FeatureLevel{Name: metadata.TransactionVersionFeature, Level: c.cfg.BootstrapTransactionVersion})
			}
			return recs, err
		},
		settle: func(_ *metadata.Image, err error) func() {
			if err != nil {
				return func() { done(-1, err) }
			}
			c.renew(reg.ID, conn)
			c.note("broker registered", "broker", reg.ID, "epoch", epoch, "previous_clean_epoch", reg.PreviousBrokerEpoch, "replica_capacity", reg.ReplicaCapacity, "open_files_limit", reg.OpenFilesLimit)
			return func() { done(epoch, nil) }
		}})
	return c.end()
}

// heartbeatAction is what a heartbeat asks of the controller, from the
// broker's registered state and the request's wishes, as Kafka's
// BrokerHeartbeatManager decides it: a fenced broker is unfenced once it
// has caught up with its registration, unless it wants to stay fenced or
// stop; an unfenced one that wants to be fenced is; one that wants to stop
// begins a controlled shutdown (its leaderships move) once.
type heartbeatAction int

const (
	stay heartbeatAction = iota
	unfence
	fence
	beginShutdown
)

func (a heartbeatAction) String() string {
	return [...]string{"stay", "unfence", "fence", "controlled shutdown"}[a]
}

func actionFor(br *metadata.Broker, wantFence, wantShutdown, caughtUp bool) heartbeatAction {
	switch {
	case br.Fenced:
		if caughtUp && !wantFence && !wantShutdown {
			return unfence
		}
	case wantFence:
		return fence
	case wantShutdown && !br.InControlledShutdown:
		return beginShutdown
	}
	return stay
}

// Heartbeat renews a broker's session at once (if its epoch is the
// registered one) and, when the heartbeat asks for a change (unfencing,
// fencing, controlled shutdown), queues it: the change is decided again at
// its turn, against the image that holds every decision before it. It is
// answered once that change is applied, with the state it left.
func (c *Core) Heartbeat(now time.Time, im *metadata.Image, req *kmsg.BrokerHeartbeatRequest, conn api.ConnID, done func(api.BrokerHeartbeatResult, error)) Ready {
	c.begin(now)
	id, epoch := req.BrokerID, req.BrokerEpoch
	br, ok := im.Broker(id)
	switch {
	case !c.active:
		c.rd.Answers = append(c.rd.Answers, func() { done(api.BrokerHeartbeatResult{}, kerr.NotController) })
		return c.end()
	case !ok || br.Epoch != epoch:
		c.rd.Answers = append(c.rd.Answers, func() { done(api.BrokerHeartbeatResult{}, kerr.StaleBrokerEpoch) })
		return c.end()
	}
	c.renew(id, conn)
	caughtUp := req.CurrentMetadataOffset >= br.Epoch-1
	result := func(im *metadata.Image) api.BrokerHeartbeatResult {
		res := api.BrokerHeartbeatResult{IsCaughtUp: caughtUp, IsFenced: true}
		if cur, ok := im.Broker(id); ok {
			res.IsFenced = cur.Fenced
		}
		res.ShouldShutdown = req.WantShutdown && !leadsAnything(im, id)
		return res
	}
	if actionFor(br, req.WantFence, req.WantShutdown, caughtUp) == stay {
		res := result(im)
		c.rd.Answers = append(c.rd.Answers, func() { done(res, nil) })
		return c.end()
	}
	var action heartbeatAction
	c.enqueue(im, decision{what: fmt.Sprintf("heartbeat of broker %d", id), atCommit: true,
		decide: func(im *metadata.Image) ([]metadata.Record, error) {
			cur, ok := im.Broker(id)
			if !ok || cur.Epoch != epoch {
				return nil, kerr.StaleBrokerEpoch
			}
			action = actionFor(cur, req.WantFence, req.WantShutdown, caughtUp)
			return c.heartbeatRecords(im, id, action)
		},
		settle: func(im *metadata.Image, err error) func() {
			if err != nil {
				return func() { done(api.BrokerHeartbeatResult{}, err) }
			}
			if action != stay {
				c.note("heartbeat changed broker state", "broker", id, "change", action.String())
			}
			res := result(im)
			return func() { done(res, nil) }
		}})
	return c.end()
}

func (c *Core) heartbeatRecords(im *metadata.Image, id int32, a heartbeatAction) ([]metadata.Record, error) {
	var recs []metadata.Record
	var err error
	switch a {
	case stay:
		return nil, nil
	case unfence:
		recs, err = controller.UnfenceBroker(im, id)
	case fence:
		recs, err = controller.FenceBroker(im, id)
	case beginShutdown:
		// BeginControlledShutdown elects the new leaders itself.
		return controller.BeginControlledShutdown(im, id)
	}
	if err != nil {
		return nil, err
	}
	next, err := im.Apply(recs...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
	}
	return append(recs, controller.ElectLeaderless(next, c.unclean)...), nil
}

// leadsAnything: a broker that still leads a partition with other
// replicas is not done with its controlled shutdown.
func leadsAnything(im *metadata.Image, id int32) bool {
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == id && len(p.Replicas) > 1 {
				return true
			}
		}
	}
	return false
}

// AlterPartition decides an ISR change a partition leader proposed and
// answers with the partition as committed.
func (c *Core) AlterPartition(now time.Time, im *metadata.Image, req api.AlterPartitionParams, done func(metadata.Partition, error)) Ready {
	return c.AlterPartitions(now, im, []api.AlterPartitionParams{req}, func(res []api.AlterPartitionResult) {
		done(res[0].Partition, res[0].Err)
	})
}

// AlterPartitions decides the ISR changes of one AlterPartition request as
// one decision, committed in one metadata entry: a leader's batcher sends
// every change it has pending at once, and a broker with thousands of
// partitions would otherwise wait for thousands of commits in a row. Each
// change is decided against the image holding the ones before it, and
// refused on its own (the others go on); done gets one result per change,
// in order, once the entry is applied (or the whole decision failed).
func (c *Core) AlterPartitions(now time.Time, im *metadata.Image, reqs []api.AlterPartitionParams, done func([]api.AlterPartitionResult)) Ready {
	c.begin(now)
	errs := make([]error, len(reqs))
	what := fmt.Sprintf("%d ISR changes", len(reqs))
	if len(reqs) == 1 {
		what = fmt.Sprintf("ISR change of %s-%d to %v", reqs[0].Topic, reqs[0].Partition, reqs[0].NewISR)
	}
	c.enqueue(im, decision{what: what,
		decide: func(im *metadata.Image) ([]metadata.Record, error) {
			var all []metadata.Record
			cur := im
			for i, req := range reqs {
				if br, ok := cur.Broker(req.BrokerID); !ok || br.Epoch != req.BrokerEpoch || br.Fenced {
					errs[i] = kerr.StaleBrokerEpoch
					continue
				}
				recs, err := controller.AlterPartition(cur, req.Topic, req.Partition, req.LeaderEpoch, req.PartitionEpoch, req.NewISR)
				if err != nil {
					errs[i] = err
					continue
				}
				if len(recs) == 0 {
					continue
				}
				next, err := cur.Apply(recs...)
				if err != nil {
					errs[i] = fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
					continue
				}
				cur, all = next, append(all, recs...)
			}
			return all, nil
		},
		settle: func(im *metadata.Image, err error) func() {
			res := make([]api.AlterPartitionResult, len(reqs))
			for i, req := range reqs {
				switch {
				case errs[i] != nil:
					res[i].Err = errs[i]
				case err != nil:
					res[i].Err = err
				default:
					t, ok := im.TopicByID(req.Topic)
					if !ok || req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
						res[i].Err = kerr.UnknownTopicOrPartition
						continue
					}
					res[i].Partition = t.Partitions[req.Partition]
				}
			}
			return func() { done(res) }
		}})
	return c.end()
}

// AllocateProducerIDs commits the next block of producer ids before
// handing it out, so no id is ever given twice in the cluster.
func (c *Core) AllocateProducerIDs(now time.Time, im *metadata.Image, brokerID int32, brokerEpoch int64, done func(int64, int32, error)) Ready {
	c.begin(now)
	var start int64
	size := c.cfg.PIDBlockSize
	c.enqueue(im, decision{what: fmt.Sprintf("producer id block for broker %d", brokerID),
		decide: func(im *metadata.Image) ([]metadata.Record, error) {
			if br, ok := im.Broker(brokerID); !ok || br.Epoch != brokerEpoch {
				return nil, kerr.StaleBrokerEpoch
			}
			start = im.NextProducerID()
			return []metadata.Record{metadata.AllocateProducerIDs{NextID: start + int64(size)}}, nil
		},
		settle: func(_ *metadata.Image, err error) func() {
			if err != nil {
				return func() { done(0, 0, err) }
			}
			return func() { done(start, size, nil) }
		}})
	return c.end()
}

// Reassign decides an AlterPartitionReassignments request at its turn
// (controller.AlterPartitionReassignments against the image of that turn)
// and answers each entry's outcome once the accepted ones are applied; err
// is the whole request's (no longer controller, the commit failed), and
// errs is nil when the decision never ran.
func (c *Core) Reassign(now time.Time, im *metadata.Image, reqs []controller.Reassignment, allowRFChange bool, done func(errs []error, err error)) Ready {
	var errs []error
	opts := controller.ReassignOptions{AllowReplicationFactorChange: allowRFChange, Unclean: c.unclean}
	return c.Submit(now, im, fmt.Sprintf("reassignment of %d partitions", len(reqs)),
		func(im *metadata.Image) ([]metadata.Record, error) {
			recs, e := controller.AlterPartitionReassignments(im, reqs, opts)
			errs = e
			return recs, nil
		},
		func(err error) { done(errs, err) })
}

// Unregister decides an UnregisterBroker request at its turn
// (controller.UnregisterBroker against the image of that turn) and answers
// once its records are applied. The broker's session is left to expire: a
// broker still running finds its epoch stale at its next heartbeat and
// registers again, as in Kafka.
func (c *Core) Unregister(now time.Time, im *metadata.Image, id int32, done func(error)) Ready {
	return c.Submit(now, im, fmt.Sprintf("unregistration of broker %d", id),
		func(im *metadata.Image) ([]metadata.Record, error) { return controller.UnregisterBroker(im, id) },
		done)
}
