package ctrlcore

import (
	"time"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// balancerConfig is the automatic balancer's part of b, and how often it
// runs (0 when auto.replica.balance.enable is off).
func balancerConfig(b *config.Broker) (balancer.Config, time.Duration) {
	bc := balancer.Config{
		MaxConcurrentMoves: b.ReplicaBalanceMaxConcurrentMoves,
		UnavailableTimeout: b.ReplicaBalanceUnavailableTimeout,
		ImbalancePercent:   b.ReplicaImbalancePerBrokerPercent,
	}
	if !b.AutoReplicaBalanceEnable {
		return bc, 0
	}
	return bc, max(b.ReplicaBalanceCheckInterval, time.Second)
}

// View is the balancer's view of im: brokers unfenced and not shutting
// down are available; unavailableFor says how long one has not been.
func View(im *metadata.Image, unavailableFor func(id int32) time.Duration) ([]balancer.Broker, []balancer.Partition) {
	var bs []balancer.Broker
	for _, br := range im.Brokers() {
		b := balancer.Broker{ID: br.ID, Rack: br.Rack, Available: !br.Fenced && !br.InControlledShutdown}
		if !b.Available {
			b.UnavailableFor = unavailableFor(br.ID)
		}
		bs = append(bs, b)
	}
	var ps []balancer.Partition
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			ps = append(ps, balancer.Partition{Topic: t.Name, Index: p.Index, Replicas: p.Replicas, ISR: p.ISR,
				Leader: p.Leader, Reassigning: p.Reassigning()})
		}
	}
	return bs, ps
}

// trackUnavailable records when each broker of im was first seen
// unavailable by this controller. A new active controller starts counting
// afresh (Activate clears it): it cannot know how long a broker was gone
// before, and waiting longer is the side that moves nothing in error.
func (c *Core) trackUnavailable(im *metadata.Image) {
	present := map[int32]bool{}
	for _, br := range im.Brokers() {
		present[br.ID] = true
		if !br.Fenced && !br.InControlledShutdown {
			delete(c.unavailableSince, br.ID)
		} else if _, ok := c.unavailableSince[br.ID]; !ok {
			c.unavailableSince[br.ID] = c.now
		}
	}
	for id := range c.unavailableSince {
		if !present[id] {
			delete(c.unavailableSince, id)
		}
	}
}

// balance runs the automatic balancer against im when it is due: its
// moves become reassignments (decided as AlterPartitionReassignments
// entries are, without a replication factor change). The plan's elections
// are left to auto.leader.rebalance.enable (maintenance): a move puts the
// newcomer at the replaced replica's place, so a preferred leadership
// passes to it and that rebalance elects it once it is in sync. Electing
// here as well would run preferred-leader elections every check interval,
// far more often than leader.imbalance.check.interval.seconds allows.
func (c *Core) balance(im *metadata.Image, recs []metadata.Record) (_ *metadata.Image, moves int, _ []metadata.Record) {
	c.trackUnavailable(im)
	if c.cfg.BalanceInterval <= 0 || c.now.Sub(c.lastBalance) < c.cfg.BalanceInterval {
		return im, 0, recs
	}
	c.lastBalance = c.now
	bs, ps := View(im, func(id int32) time.Duration { return c.now.Sub(c.unavailableSince[id]) })
	plan := balancer.Decide(bs, ps, c.cfg.Balancer)
	if len(plan.Moves) > 0 {
		reqs := make([]controller.Reassignment, len(plan.Moves))
		for i, m := range plan.Moves {
			reqs[i] = controller.Reassignment{Topic: m.Topic, Partition: m.Partition, Target: m.Target}
		}
		more, errs := controller.AlterPartitionReassignments(im, reqs, controller.ReassignOptions{Unclean: c.unclean})
		for i, err := range errs {
			if err != nil {
				c.note("balancer move refused", "move", plan.Moves[i].String(), "err", err)
			} else {
				c.note("balancer moves a replica", "move", plan.Moves[i].String())
				moves++
			}
		}
		im, recs = chain(im, recs, more)
	}
	return im, moves, recs
}
