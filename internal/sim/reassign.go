package sim

import (
	"time"

	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
)

// nextReassign runs reassign every 0.2-1.5 s of the faulty phase, beside
// (not instead of) the other faults, so moves overlap crashes, pauses and
// partitions, and some are still in progress when the next one comes.
func (f *faultState) nextReassign() {
	c := f.c
	if c.healed || c.stopped {
		return
	}
	c.s.after(c.s.between(200*time.Millisecond, 1500*time.Millisecond), f.nextReassign)
	f.reassign()
}

// reassign plays an operator moving one partition of the run's topic
// (kafka-reassign-partitions --execute) through the active controller's
// queue, as AlterPartitionReassignments does in node (ctrlcore.Reassign):
// to a random set of nodes, a quarter of the time with one replica more or
// fewer (a replication factor change), or, for a partition already
// moving, half the time a cancel. Brokers then add replicas, catch them up
// and retire the removed ones on their own, under whatever faults run.
func (f *faultState) reassign() {
	c := f.c
	ctl := c.activeController()
	if ctl == nil {
		return
	}
	t, ok := ctl.image.Topic(topicName)
	if !ok {
		return
	}
	p := t.Partitions[c.s.rng.IntN(len(t.Partitions))]
	rq := controller.Reassignment{Topic: t.Name, Partition: p.Index}
	st := &c.check.stats
	if p.Reassigning() && c.s.chance(0.5) {
		st.Cancels++
		c.tracef("OP cancel the reassignment of %s-%d", t.Name, p.Index)
	} else {
		rf := len(p.TargetReplicas())
		if c.s.chance(0.25) {
			rf += []int{-1, 1}[c.s.rng.IntN(2)]
		}
		rf = max(1, min(rf, len(c.ids)))
		ids := append([]int32(nil), c.ids...)
		c.s.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		rq.Target = ids[:rf]
		st.Reassignments++
		c.tracef("OP reassign %s-%d from %v to %v", t.Name, p.Index, p.Replicas, rq.Target)
		c.throttle(ctl, t, rq.Target)
	}
	ctl.Step(func(core *ctrlcore.Core, now time.Time, im *metadata.Image) ctrlcore.Ready {
		return core.Reassign(now, im, []controller.Reassignment{rq}, true, func(errs []error, err error) {
			if err == nil && len(errs) == 1 {
				err = errs[0]
			}
			if capacityRefusal(err) {
				st.CapacityRefusals++
			}
			c.tracef("OP reassignment of %s-%d to %v: %v", rq.Topic, rq.Partition, rq.Target, err)
		})
	})
}
