package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// The active controller's runtime, mirroring internal/node's
// controllerService and commitDecided: decisions come from
// internal/controller and are taken one at a time against the latest
// image, each proposed only after the previous one committed, and only
// after a barrier entry proved this controller has applied everything
// committed before its term. Production blocks a goroutine per decision;
// here a decision is a queued closure and its answer a callback.

// commitTimeout bounds a decision's wait for its entry to commit.
const commitTimeout = 5 * time.Second

type controllerState struct {
	term      uint64
	caughtUp  bool
	queue     []decision
	inflight  []proposal
	lastSeen  map[int32]time.Duration
	lastCheck time.Duration
}

type decision struct {
	what   string
	decide func(*metadata.Image) ([]metadata.Record, error)
	done   func(error)
}

type proposal struct {
	data []byte
	done func(error)
}

func (p *process) activateController() {
	c := &controllerState{term: p.core.Term(), lastSeen: map[int32]time.Duration{}}
	now := p.n.c.s.now
	for _, br := range p.image.Brokers() {
		c.lastSeen[br.ID] = now
	}
	p.ctrl = c
	p.n.after(controllerPeriod, p.controllerLoop(c))
}

func (p *process) deactivateController() {
	c := p.ctrl
	p.ctrl = nil
	for _, pr := range c.inflight {
		pr.done(kerr.NotController)
	}
	for _, d := range c.queue {
		d.done(kerr.NotController)
	}
}

// decide queues a controller decision; done gets its outcome once its
// records are committed (and applied here) or refused.
func (p *process) decide(what string, fn func(*metadata.Image) ([]metadata.Record, error), done func(error)) {
	c := p.ctrl
	if c == nil {
		done(kerr.NotController)
		return
	}
	c.queue = append(c.queue, decision{what: what, decide: fn, done: done})
	p.runDecisions(c)
}

func (p *process) runDecisions(c *controllerState) {
	for p.ctrl == c && len(c.inflight) == 0 && len(c.queue) > 0 {
		if !c.caughtUp {
			p.propose(c, metadata.BarrierEntry, func(err error) {
				if err == nil {
					c.caughtUp = true
				}
				p.runDecisions(c)
			})
			return
		}
		d := c.queue[0]
		c.queue = c.queue[1:]
		recs, err := d.decide(p.image)
		if err == nil && len(recs) > 0 {
			if _, aerr := p.image.Apply(recs...); aerr != nil {
				err = fmt.Errorf("%w: %v", kerr.InvalidRequest, aerr)
			}
		}
		if err != nil || len(recs) == 0 {
			d.done(err)
			continue
		}
		data, err := metadata.EncodeEntry(recs)
		if err != nil {
			d.done(err)
			continue
		}
		p.n.tracef("controller commits %s: %s", d.what, describeRecords(recs))
		p.propose(c, data, func(err error) {
			d.done(err)
			p.runDecisions(c)
		})
		return
	}
}

func (p *process) propose(c *controllerState, data []byte, done func(error)) {
	if err := p.core.Propose(data); err != nil {
		done(fmt.Errorf("%w: %v", kerr.NotController, err))
		return
	}
	pr := proposal{data: data, done: done}
	c.inflight = append(c.inflight, pr)
	p.processReady()
	p.n.after(commitTimeout, func() {
		if p.ctrl != c || len(c.inflight) == 0 || &c.inflight[0].data[0] != &data[0] {
			return
		}
		// Never committed in time (lost leadership without noticing yet):
		// give up on everything queued; callers retry.
		p.n.tracef("controller proposal did not commit in %v", commitTimeout)
		p.deactivateController()
	})
}

// controllerLoop fences brokers whose sessions expired and elects leaders
// for leaderless partitions (controllerService.loop without the socket
// probes: the simulation has no connections to watch).
func (p *process) controllerLoop(c *controllerState) func() {
	return func() {
		if p.ctrl != c {
			return
		}
		p.n.after(controllerPeriod, p.controllerLoop(c))
		if len(c.queue) > 0 || len(c.inflight) > 0 {
			return
		}
		now := p.n.c.s.now
		for _, br := range p.image.Brokers() {
			if br.Fenced || br.ID == p.n.id {
				continue
			}
			seen, ok := c.lastSeen[br.ID]
			if !ok {
				c.lastSeen[br.ID] = now
				continue
			}
			if now-seen > sessionTimeout {
				id := br.ID
				p.decide(fmt.Sprintf("fence of broker %d (session expired)", id), func(im *metadata.Image) ([]metadata.Record, error) {
					recs, err := controller.FenceBroker(im, id)
					if err != nil {
						return nil, err
					}
					next, err := im.Apply(recs...)
					if err != nil {
						return nil, err
					}
					return append(recs, controller.ElectLeaderless(next, p.uncleanAllowed)...), nil
				}, func(error) {})
			}
		}
		p.decide("leaderless elections", func(im *metadata.Image) ([]metadata.Record, error) {
			return controller.ElectLeaderless(im, p.uncleanAllowed), nil
		}, func(error) {})
		if p.cfg.AutoLeaderRebalanceEnable && now-c.lastCheck > 5*time.Second {
			c.lastCheck = now
			p.decide("preferred leader election", func(im *metadata.Image) ([]metadata.Record, error) {
				return controller.PreferredLeaderElection(im), nil
			}, func(error) {})
		}
	}
}

func (p *process) uncleanAllowed(t *metadata.Topic) bool {
	cfg, err := config.ResolveTopic(p.cfg, t.Configs)
	return err == nil && cfg.UncleanLeaderElection
}

// writeCaching is controllerService.writeCaching.
func (p *process) writeCaching(t *metadata.Topic) bool {
	cfg, err := config.ResolveTopic(p.cfg, t.Configs)
	return err != nil || cfg.WriteCaching
}

// registerBroker is controllerService.RegisterBroker.
func (p *process) registerBroker(reg controller.Registration, done func(epoch int64, err error)) {
	id := reg.ID
	var epoch int64
	p.decide(fmt.Sprintf("registration of broker %d", id), func(im *metadata.Image) ([]metadata.Record, error) {
		recs, e, err := controller.RegisterBroker(im, reg, p.writeCaching, p.uncleanAllowed)
		epoch = e
		return recs, err
	}, func(err error) {
		if err == nil && p.ctrl != nil {
			p.ctrl.lastSeen[id] = p.n.c.s.now
		}
		done(epoch, err)
	})
}

// heartbeat is controllerService.BrokerHeartbeat without controlled
// shutdown: renew the session, unfence a caught-up broker.
func (p *process) heartbeat(id int32, epoch, metadataOffset int64, done func(fenced bool, err error)) {
	br, ok := p.image.Broker(id)
	if !ok || br.Epoch != epoch {
		done(false, kerr.StaleBrokerEpoch)
		return
	}
	p.ctrl.lastSeen[id] = p.n.c.s.now
	if !br.Fenced || metadataOffset < br.Epoch-1 {
		done(br.Fenced, nil)
		return
	}
	p.decide(fmt.Sprintf("unfence of broker %d", id), func(im *metadata.Image) ([]metadata.Record, error) {
		if cur, ok := im.Broker(id); !ok || cur.Epoch != epoch || !cur.Fenced {
			return nil, nil
		}
		recs, err := controller.UnfenceBroker(im, id)
		if err != nil {
			return nil, err
		}
		next, err := im.Apply(recs...)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
		}
		return append(recs, controller.ElectLeaderless(next, p.uncleanAllowed)...), nil
	}, func(err error) {
		cur, _ := p.image.Broker(id)
		done(cur != nil && cur.Fenced, err)
	})
}

// alterPartition is controllerService.AlterPartition.
func (p *process) alterPartition(brokerID int32, brokerEpoch int64, topic metadata.TopicID, partition, leaderEpoch, partitionEpoch int32, isr []int32, done func(error)) {
	p.decide(fmt.Sprintf("ISR change of %s-%d to %v", shortID(topic), partition, isr), func(im *metadata.Image) ([]metadata.Record, error) {
		if br, ok := im.Broker(brokerID); !ok || br.Epoch != brokerEpoch || br.Fenced {
			return nil, kerr.StaleBrokerEpoch
		}
		return controller.AlterPartition(im, topic, partition, leaderEpoch, partitionEpoch, isr)
	}, done)
}

// allocateProducerIDs is controllerService.AllocateProducerIDs.
func (p *process) allocateProducerIDs(brokerID int32, brokerEpoch int64, done func(start int64, err error)) {
	var start int64
	p.decide(fmt.Sprintf("producer id block for broker %d", brokerID), func(im *metadata.Image) ([]metadata.Record, error) {
		if br, ok := im.Broker(brokerID); !ok || br.Epoch != brokerEpoch {
			return nil, kerr.StaleBrokerEpoch
		}
		start = im.NextProducerID()
		return []metadata.Record{metadata.AllocateProducerIDs{NextID: start + pidBlock}}, nil
	}, func(err error) { done(start, err) })
}

// pidBlock is small so that runs ask for new blocks often.
const pidBlock = 8

func shortID(id metadata.TopicID) string { return id.String()[:4] }

func describeRecords(recs []metadata.Record) string {
	s := ""
	for i, r := range recs {
		if i > 0 {
			s += "; "
		}
		switch r := r.(type) {
		case metadata.PartitionChange:
			s += fmt.Sprintf("%s-%d", shortID(r.TopicID), r.Partition)
			if r.Leader != nil {
				s += fmt.Sprintf(" leader=%d", *r.Leader)
			}
			if r.ISR != nil {
				s += fmt.Sprintf(" isr=%v", *r.ISR)
			}
			if r.ELR != nil {
				s += fmt.Sprintf(" elr=%v", *r.ELR)
			}
		default:
			s += fmt.Sprintf("%T%+v", r, r)
		}
	}
	return s
}
