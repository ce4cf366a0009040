package ctrlcore

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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

		DiskImbalancePercent:  b.ReplicaBalanceDiskImbalancePct,
		DiskMinImbalanceBytes: b.ReplicaBalanceDiskMinBytes,
		MaxDiskUsagePercent:   b.ReplicaBalanceMaxDiskUsagePct,
		LogDirs:               b.ReplicaBalanceLogDirsEnable,
	}
	if !b.AutoReplicaBalanceEnable {
		return bc, 0
	}
	return bc, max(b.ReplicaBalanceCheckInterval, time.Second)
}

// View is the balancer's view of im: brokers unfenced and not shutting
// down are available; unavailableFor says how long one has not been. Each
// broker's replica capacity is the one it registered, which the
// controller's reassignment check holds the moves to
// (controller/capacity.go), so the balancer plans none it would refuse.
func View(im *metadata.Image, unavailableFor func(id int32) time.Duration) ([]balancer.Broker, []balancer.Partition) {
	var bs []balancer.Broker
	for _, br := range im.Brokers() {
		b := balancer.Broker{ID: br.ID, Rack: br.Rack, Available: !br.Fenced && !br.InControlledShutdown,
			ReplicaCapacity: int(br.ReplicaCapacity)}
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

// gatherRound is one round of DescribeLogDirs answers for the balancer:
// asked of every unfenced broker when a balance is due; the balance runs
// once every answer (or failure) is in, or the round is older than
// gatherTimeout, with the reports of this round only, so no move is
// decided on sizes from before the previous moves.
type gatherRound struct {
	started time.Time
	pending map[int32]bool
	reports map[int32]balancer.Report
}

// gatherTimeout bounds a round: a broker that has not answered by then
// counts as unreported (it then takes no replica).
func (c *Core) gatherTimeout() time.Duration { return min(c.cfg.BalanceInterval, 10*time.Second) }

// startGather opens a round when a balance is due and none is open.
func (c *Core) startGather(im *metadata.Image) {
	if !c.active || c.cfg.BalanceInterval <= 0 || c.gather != nil || c.now.Sub(c.lastBalance) < c.cfg.BalanceInterval {
		return
	}
	g := &gatherRound{started: c.now, pending: map[int32]bool{}, reports: map[int32]balancer.Report{}}
	for _, br := range im.Brokers() {
		if !br.Fenced && !br.InControlledShutdown {
			g.pending[br.ID] = true
			c.rd.DescribeLogDirs = append(c.rd.DescribeLogDirs, br.ID)
		}
	}
	c.gather = g
}

// LogDirsReported takes broker id's DescribeLogDirs answer for the round
// in progress (nil: the request failed). Answers to an older round, or
// from a broker not asked, are dropped.
func (c *Core) LogDirsReported(now time.Time, id int32, r *balancer.Report) Ready {
	c.begin(now)
	if g := c.gather; g != nil && g.pending[id] {
		delete(g.pending, id)
		if r != nil {
			g.reports[id] = *r
		} else {
			c.note("balancer: broker's log directories unknown this round", "broker", id)
		}
	}
	return c.end()
}

// gathered reports whether the round is complete (or timed out).
func (c *Core) gathered() bool {
	g := c.gather
	return g != nil && (len(g.pending) == 0 || c.now.Sub(g.started) >= c.gatherTimeout())
}

// balance runs the automatic balancer against im once a round of
// DescribeLogDirs is in: its
// moves become reassignments (decided as AlterPartitionReassignments
// entries are, without a replication factor change). The plan's elections
// are left to auto.leader.rebalance.enable (maintenance): a move puts the
// newcomer at the replaced replica's place, so a preferred leadership
// passes to it and that rebalance elects it once it is in sync. Electing
// here as well would run preferred-leader elections every check interval,
// far more often than leader.imbalance.check.interval.seconds allows.
func (c *Core) balance(im *metadata.Image, recs []metadata.Record) (*metadata.Image, []metadata.Record) {
	c.trackUnavailable(im)
	if c.cfg.BalanceInterval <= 0 || !c.gathered() {
		return im, recs
	}
	reports := c.gather.reports
	c.lastBalance, c.gather = c.now, nil
	bs, ps := View(im, func(id int32) time.Duration { return c.now.Sub(c.unavailableSince[id]) })
	balancer.Apply(bs, ps, reports)
	plan := balancer.Decide(bs, ps, c.cfg.Balancer)
	if len(plan.Moves) > 0 {
		reqs := make([]controller.Reassignment, len(plan.Moves))
		for i, m := range plan.Moves {
			reqs[i] = controller.Reassignment{Topic: m.Topic, Partition: m.Partition, Target: m.Target}
		}
		more, errs := controller.AlterPartitionReassignments(im, reqs, controller.ReassignOptions{Unclean: c.unclean})
		for i, err := range errs {
			if err != nil {
				// The balancer plans on im's counts and capacities, which
				// the check reads too, so a refusal is a disagreement
				// between the two: the runtimes report it
				// (the simulator as a violation).
				c.note("balancer move refused", "move", plan.Moves[i].String(), "err", err)
				c.rd.BalancerRefused = append(c.rd.BalancerRefused, RefusedMove{Move: plan.Moves[i], Err: err})
			} else {
				c.note("balancer moves a replica", "move", plan.Moves[i].String())
				c.rd.BalancerMoves = append(c.rd.BalancerMoves, plan.Moves[i])
			}
		}
		im, recs = chain(im, recs, more)
	}
	if c.cfg.Balancer.LogDirs {
		// On the image with this round's reassignments: a partition
		// moving between brokers is not moved within one as well.
		skip := func(tp balancer.TopicPartition) bool {
			t, ok := im.Topic(tp.Topic)
			if !ok {
				return true
			}
			p, ok := t.Partition(tp.Partition)
			return !ok || p.Reassigning()
		}
		for _, m := range balancer.DecideDirs(reports, skip, c.cfg.Balancer) {
			c.note("balancer moves a replica between log directories", "move", m.String())
			c.rd.LogDirMoves = append(c.rd.LogDirMoves, m)
		}
	}
	return im, recs
}

// ReportOf is a DescribeLogDirs answer as the balancer reads it.
func ReportOf(resp *kmsg.DescribeLogDirsResponse) balancer.Report {
	var rb balancer.ReportBuilder
	for _, d := range resp.Dirs {
		rb.Dir(d.Dir, d.TotalBytes, d.UsableBytes, d.ErrorCode != 0)
		if d.ErrorCode != 0 {
			continue
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				rb.Replica(t.Topic, p.Partition, p.Size, p.IsFuture)
			}
		}
	}
	if resp.ErrorCode != 0 {
		return balancer.Report{}
	}
	return rb.Report()
}

// LogDirsRequest is the request the runtime sends for DescribeLogDirs:
// v4 (the volume's bytes), every partition.
func LogDirsRequest() *kmsg.DescribeLogDirsRequest {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	return req
}

// AlterLogDirRequest is the AlterReplicaLogDirs (v2) the runtime sends a
// broker for a move between its log directories.
func AlterLogDirRequest(m balancer.DirMove) *kmsg.AlterReplicaLogDirsRequest {
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.SetVersion(2)
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = m.To
	t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	t.Topic, t.Partitions = m.Topic, []int32{m.Partition}
	d.Topics = append(d.Topics, t)
	req.Dirs = append(req.Dirs, d)
	return req
}

// AlterLogDirOutcome is the error of the one partition an
// AlterLogDirRequest named (nil: the move started).
func AlterLogDirOutcome(resp *kmsg.AlterReplicaLogDirsResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
