package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// reassignPoll is how often the reassign fault looks whether its move has
// completed.
const reassignPoll = 200 * time.Millisecond

// reassignTarget is where the reassign fault moves a partition of
// replicas led by leader, on brokers 1..brokers: the leader's place goes
// to the pick-th broker (modulo how many there are) not already a
// replica, so the move carries the leadership off and the data onto a
// broker that has none of it; the replication factor stays. When every
// broker is a replica already, the replicas rotate instead (the preferred
// leader changes, nothing is copied). Nil when nothing can change.
func reassignTarget(replicas []int32, leader int32, pick, brokers int) []int32 {
	if len(replicas) == 0 {
		return nil
	}
	var outside []int32
	for b := int32(1); b <= int32(brokers); b++ {
		if !slices.Contains(replicas, b) {
			outside = append(outside, b)
		}
	}
	target := slices.Clone(replicas)
	if len(outside) == 0 {
		if len(target) < 2 {
			return nil
		}
		return append(target[1:], target[0])
	}
	at := slices.Index(target, leader)
	if at < 0 {
		at = 0 // leaderless: move the preferred replica
	}
	target[at] = outside[pick%len(outside)]
	return target
}

// reassign moves one of the workload's partitions (s.partition, its
// leader's replica included: reassignTarget) while the other faults go on,
// and holds until the move completes or s.hold passes. A move that has not
// completed is left running: it completes once the brokers it waits for
// are back, and heal's wait for a whole cluster waits for it through the
// full-ISR check at the end of the run. A refused or unanswered request
// (no controller during a partition, say) is logged, not a failure: it
// is the cluster's to refuse.
func (n *nemesis) reassign(ctx context.Context, s FaultStep) error {
	partition := s.partition % int32(n.parts)
	cl, err := n.c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	md, err := adm.Metadata(lctx, n.topic)
	cancel()
	p, ok := md.Topics[n.topic].Partitions[partition]
	if err != nil || !ok {
		fmt.Fprintf(n.log, "nemesis: partition %d not known (%v); no reassignment\n", partition, err)
		return nil
	}
	if len(p.Replicas) != n.rf {
		// Metadata lists the union of old and new replicas while a move is
		// in progress; a new target from it would change the replication
		// factor.
		fmt.Fprintf(n.log, "nemesis: partition %d is still moving (replicas %v); no new reassignment\n", partition, p.Replicas)
		return nil
	}
	target := reassignTarget(p.Replicas, p.Leader, s.broker, n.c.Brokers())
	if target == nil {
		return nil
	}
	note := fmt.Sprintf("reassign partition %d from %v (leader %d) to %v", partition, p.Replicas, p.Leader, target)
	id := n.begin(int(target[0])-1, FaultReassign, note)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(n.topic, partition, target)
	actx, cancel := context.WithTimeout(ctx, lookupTimeout)
	res, err := adm.AlterPartitionAssignments(actx, req)
	cancel()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		n.end(id, fmt.Sprintf("reassignment of partition %d not started: %v", partition, err))
		return nil
	}
	deadline := time.Now().Add(s.hold)
	set := kadm.TopicsSet{}
	set.Add(n.topic, partition)
	for time.Now().Before(deadline) {
		if !sleepCtx(ctx, reassignPoll) {
			return nil
		}
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		moving, err := adm.ListPartitionReassignments(lctx, set)
		cancel()
		if _, still := moving[n.topic][partition]; err == nil && !still {
			n.end(id, fmt.Sprintf("reassignment of partition %d to %v completed", partition, target))
			return nil
		}
	}
	n.end(id, fmt.Sprintf("reassignment of partition %d to %v still in progress after %v; left running", partition, target, s.hold))
	return nil
}
