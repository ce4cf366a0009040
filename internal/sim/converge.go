package sim

import (
	"fmt"
	"strings"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txn"
)

// converged: one active controller every node agrees with, and every
// partition led, with its full replica set in sync and every log equal.
func (c *Cluster) converged() bool {
	return c.convergenceReport() == ""
}

func (c *Cluster) convergenceReport() string {
	ctl := c.activeController()
	if ctl == nil {
		return "no active controller"
	}
	if _, ok := ctl.image.Topic(topicName); !ok {
		return "topic not created"
	}
	if msg := c.membershipReport(); msg != "" {
		return msg
	}
	for _, id := range c.ids {
		p := c.nodes[id].proc
		if p == nil {
			return fmt.Sprintf("n%d is down", id)
		}
		if p.brokerEpoch < 0 {
			return fmt.Sprintf("n%d not registered", id)
		}
		if br, ok := ctl.image.Broker(id); !ok || br.Fenced {
			return fmt.Sprintf("n%d fenced", id)
		}
	}
	for _, t := range ctl.image.Topics() {
		if msg := c.partitionsConverged(t); msg != "" {
			return msg
		}
	}
	if msg := c.logDirConvergence(); msg != "" {
		return msg
	}
	if msg := c.capacityConvergence(ctl); msg != "" {
		return msg
	}
	if msg := c.throttleReport(ctl); msg != "" {
		return msg
	}
	if msg := c.txnConvergence(ctl); msg != "" {
		return msg
	}
	if c.opts.Groups {
		return c.groupConvergence(ctl)
	}
	return ""
}

// txnConvergence: every __transaction_state partition's leader
// coordinates it, and no transaction still waits for its markers
// (PrepareCommit or PrepareAbort). An EndTxn is acknowledged once its
// Prepare state is written, before the markers (as in Kafka), so the
// checks of the logs may find a decided transaction without its marker
// until then (seed 3423: a one-way cut held the chain's COMMIT marker
// back, healing came 250ms before the check, the marker's retry later).
// After healing every marker must land: a cluster that never gets
// there does not converge.
func (c *Cluster) txnConvergence(ctl *process) string {
	t, ok := ctl.image.Topic(txnStateTopic)
	if !ok {
		return ""
	}
	for _, st := range t.Partitions {
		// partitionsConverged has checked that st.Leader leads it.
		r := c.nodes[st.Leader].proc.parts[partKey{t.ID, st.Index}]
		if r.txnCoord == nil || !r.txnCoord.host.Active() {
			return fmt.Sprintf("%s: n%d does not coordinate it yet", r.name(), st.Leader)
		}
		waiting := r.txnCoord.host.Coordinator().List(c.nowMs(), txn.ListFilter{
			States: []txn.State{txn.PrepareCommit, txn.PrepareAbort}, MinDurationMs: -1})
		if len(waiting) > 0 {
			return fmt.Sprintf("%s: %d transactions await their markers (%s: %s)", r.name(), len(waiting), waiting[0].ID, waiting[0].State)
		}
	}
	return ""
}

func (c *Cluster) partitionsConverged(t *metadata.Topic) string {
	for _, st := range t.Partitions {
		if st.Reassigning() {
			// Every reassignment ends, completed or cancelled, once the
			// faults heal: its added replicas catch up and join the ISR.
			return fmt.Sprintf("%s-%d: reassignment in progress: replicas %v adding %v removing %v isr %v; %s",
				t.Name, st.Index, st.Replicas, st.AddingReplicas, st.RemovingReplicas, st.ISR, c.replicaReport(t.ID, st))
		}
		if st.Leader < 0 || len(st.ISR) != len(st.Replicas) {
			return fmt.Sprintf("%s-%d: leader %d isr %v replicas %v; %s", t.Name, st.Index, st.Leader, st.ISR, st.Replicas, c.replicaReport(t.ID, st))
		}
		lp := c.nodes[st.Leader].proc
		lr := lp.parts[partKey{t.ID, st.Index}]
		if lr == nil || !lr.core.IsLeader() || lr.core.LeaderEpoch() != st.LeaderEpoch {
			return fmt.Sprintf("%s-%d: n%d does not lead epoch %d yet", t.Name, st.Index, st.Leader, st.LeaderEpoch)
		}
		leo := lr.log.LogEndOffset()
		if hw := lr.core.HighWatermark(); hw != leo {
			return fmt.Sprintf("%s-%d: leader hw %d, log end %d", t.Name, st.Index, hw, leo)
		}
		for _, id := range st.Replicas {
			r := c.nodes[id].proc.parts[partKey{t.ID, st.Index}]
			if r == nil || r.log.LogEndOffset() != leo {
				return fmt.Sprintf("%s-%d: n%d not caught up", t.Name, st.Index, id)
			}
		}
	}
	return ""
}

// replicaReport describes each replica of a partition, for a person
// reading why a run did not converge.
func (c *Cluster) replicaReport(id metadata.TopicID, st metadata.Partition) string {
	var parts []string
	for _, n := range st.Replicas {
		p := c.nodes[n].proc
		if p == nil {
			parts = append(parts, fmt.Sprintf("n%d down", n))
			continue
		}
		r := p.parts[partKey{id, st.Index}]
		if r == nil {
			parts = append(parts, fmt.Sprintf("n%d has no replica", n))
			continue
		}
		desc := fmt.Sprintf("n%d: epoch %d leader %v log end %d hw %d", n, r.core.LeaderEpoch(), r.core.IsLeader(), r.log.LogEndOffset(), r.core.HighWatermark())
		if err := r.core.Failed(); err != nil {
			desc += fmt.Sprintf(" failed (%v)", err)
		}
		if f, ok := p.fetchers[st.Leader]; ok {
			if epoch, truncate, ok := f.sess.Followed(r); ok {
				desc += fmt.Sprintf(" fetcher: epoch %d truncate %v", epoch, truncate)
			}
		}
		if snap, ok := r.core.LeaderSnapshot(); ok {
			desc += fmt.Sprintf(" %+v", snap)
		}
		parts = append(parts, desc)
	}
	return strings.Join(parts, "; ")
}
