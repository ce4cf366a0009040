package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// Reassignment is one partition's entry of an AlterPartitionReassignments
// request (KIP-455): the target replicas, or nil to cancel the
// reassignment in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	Target    []int32
}

// ReassignOptions are the request-wide settings of a reassignment.
type ReassignOptions struct {
	// AllowReplicationFactorChange (KIP-1073, v1) refuses a target whose
	// size differs from the partition's replication factor when false.
	AllowReplicationFactorChange bool
	// Unclean is the topic's unclean.leader.election.enable: a cancel that
	// leaves no in-sync original replica may then elect any of them.
	Unclean func(*metadata.Topic) bool
}

// AlterPartitionReassignments decides every entry against im in order,
// each against the image holding the earlier ones' records, so entries
// naming one partition twice are decided one after the other. errs holds
// each entry's outcome (nil: accepted); the records carry the accepted ones.
func AlterPartitionReassignments(im *metadata.Image, reqs []Reassignment, opts ReassignOptions) (recs []metadata.Record, errs []error) {
	errs = make([]error, len(reqs))
	held := countLimited(im) // counted once, not for every entry
	for i, rq := range reqs {
		out, added, err := reassignPartition(im, rq, opts, held)
		if err == nil && len(out) > 0 {
			next, aerr := im.Apply(out...)
			if aerr != nil {
				err = errorf(kerr.InvalidReplicaAssignment, "%s/%d: %v", rq.Topic, rq.Partition, aerr)
			} else {
				im = next
				recs = append(recs, out...)
				held.add(added)
			}
		}
		errs[i] = err
	}
	return recs, errs
}

// ReassignPartition decides one reassignment entry.
//
// A target starts (or replaces) a reassignment as Kafka's KRaft controller
// does: the current replicas (during a reassignment already the union of
// target and original) minus the target are being removed, the target
// minus the current replicas are being added, and the replica list is the
// target followed by the ones being removed, so the preferred leader is the
// target's first. Nothing leaves the replica set or the ISR yet; the adding
// replicas join as followers, and the reassignment completes (completeIfDone)
// once they are in the ISR. A target that only reorders the replicas is
// done at once.
//
// A nil target cancels: the replicas go back to the original ones (the
// current minus those being added), the ISR and ELR keep only original
// replicas, and a leader that was being added hands over to an in-sync
// original one. A cancel that would leave no in-sync original replica
// needs an unclean election and is refused unless the topic allows one.
//
// A target adding replicas to a broker that would then hold more than its
// ReplicaCapacity (its open-files limit) is refused
// (INVALID_REPLICA_ASSIGNMENT, checkReplicaCapacity).
func ReassignPartition(im *metadata.Image, rq Reassignment, opts ReassignOptions) ([]metadata.Record, error) {
	recs, _, err := reassignPartition(im, rq, opts, countLimited(im))
	return recs, err
}

// reassignPartition is ReassignPartition with the replicas held counted
// (countLimited); it also returns the replicas the target adds, per broker.
func reassignPartition(im *metadata.Image, rq Reassignment, opts ReassignOptions, held replicaCounts) ([]metadata.Record, map[int32]int, error) {
	t, ok := im.Topic(rq.Topic)
	if !ok {
		return nil, nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", rq.Topic)
	}
	p, ok := t.Partition(rq.Partition)
	if !ok {
		return nil, nil, errorf(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", rq.Topic, rq.Partition)
	}
	if rq.Target == nil {
		recs, err := cancelReassignment(im, t, p, opts)
		return recs, nil, err
	}
	if err := validateTarget(im, t, p, rq.Target, opts); err != nil {
		return nil, nil, err
	}
	next := p.Clone()
	next.AddingReplicas = nil
	next.RemovingReplicas = nil
	for _, r := range p.Replicas {
		if !slices.Contains(rq.Target, r) {
			next.RemovingReplicas = append(next.RemovingReplicas, r)
		}
	}
	for _, r := range rq.Target {
		if !slices.Contains(p.Replicas, r) {
			next.AddingReplicas = append(next.AddingReplicas, r)
		}
	}
	added := map[int32]int{}
	for _, r := range next.AddingReplicas {
		added[r]++
	}
	if err := held.check(im, added, kerr.InvalidReplicaAssignment, fmt.Sprintf("%s/%d: ", t.Name, p.Index)); err != nil {
		return nil, nil, err
	}
	next.Replicas = append(slices.Clone(rq.Target), next.RemovingReplicas...)
	next = completeIfDone(im, next)
	rec := changeRecord(t.ID, p, next)
	if isNoChange(rec) {
		return nil, nil, nil
	}
	return []metadata.Record{rec}, added, nil
}

func validateTarget(im *metadata.Image, t *metadata.Topic, p metadata.Partition, target []int32, opts ReassignOptions) error {
	if len(target) == 0 {
		return errorf(kerr.InvalidReplicaAssignment, "%s/%d: the target replica list is empty", t.Name, p.Index)
	}
	if len(target) > metadata.MaxReplicas {
		return errorf(kerr.InvalidReplicaAssignment, "%s/%d: %d target replicas exceed %d", t.Name, p.Index, len(target), metadata.MaxReplicas)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return errorf(kerr.InvalidReplicaAssignment, "%s/%d: broker %d is listed twice in the target", t.Name, p.Index, r)
		}
		if _, ok := im.Broker(r); !ok {
			return errorf(kerr.InvalidReplicaAssignment, "%s/%d: the target includes broker %d, but no such broker is registered", t.Name, p.Index, r)
		}
	}
	if rf := len(p.OriginalReplicas()); !opts.AllowReplicationFactorChange && len(target) != rf {
		return errorf(kerr.InvalidReplicationFactor, "%s/%d: the target has %d replicas, the replication factor is %d and may not change", t.Name, p.Index, len(target), rf)
	}
	return nil
}

func cancelReassignment(im *metadata.Image, t *metadata.Topic, p metadata.Partition, opts ReassignOptions) ([]metadata.Record, error) {
	if !p.Reassigning() {
		return nil, errorf(kerr.NoReassignmentInProgress, "%s/%d has no reassignment in progress", t.Name, p.Index)
	}
	original := p.OriginalReplicas()
	inOriginal := func(r int32) bool { return slices.Contains(original, r) }
	next := p.Clone()
	next.Replicas = original
	next.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !inOriginal(r) })
	next.ELR = slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return !inOriginal(r) })
	next.AddingReplicas = nil
	next.RemovingReplicas = nil
	if !slices.Contains(next.ISR, p.Leader) {
		unclean := opts.Unclean != nil && opts.Unclean(t)
		leader, kind := electLeader(next, im.IsActive, unclean)
		if len(next.ISR) == 0 && len(next.ELR) == 0 && !unclean {
			return nil, errorf(kerr.InvalidReplicaAssignment, "%s/%d: reverting to %v would require an unclean leader election: none of them is in sync", t.Name, p.Index, original)
		}
		next = withLeader(next, leader, kind)
	}
	return []metadata.Record{changeRecord(t.ID, p, next)}, nil
}

// completeIfDone finishes next's reassignment when it can finish (Kafka's
// PartitionReassignmentReplicas.maybeCompleteReassignment): every replica
// being added is in the ISR and some target replica is. Then the replicas
// become the target, the ones being removed leave the ISR and the ELR, and a
// leader being removed hands over to the first active in-sync target
// replica; without one the reassignment waits, so leadership never passes
// to a replica that cannot take it. What is committed is on every ISR
// member, and the target's ISR members stay, so nothing committed leaves
// with a removed replica.
func completeIfDone(im *metadata.Image, next metadata.Partition) metadata.Partition {
	if !next.Reassigning() {
		return next
	}
	removing := func(r int32) bool { return slices.Contains(next.RemovingReplicas, r) }
	isr := slices.DeleteFunc(slices.Clone(next.ISR), removing)
	if len(isr) == 0 {
		return next
	}
	for _, r := range next.AddingReplicas {
		if !slices.Contains(isr, r) {
			return next
		}
	}
	done := next
	done.Replicas = next.TargetReplicas()
	done.ISR = isr
	done.ELR = slices.DeleteFunc(slices.Clone(next.ELR), removing)
	done.AddingReplicas = nil
	done.RemovingReplicas = nil
	if next.Leader != metadata.NoLeader && removing(next.Leader) {
		leader, kind := electLeader(done, im.IsActive, false)
		if kind != electedFromISR {
			return next
		}
		done.Leader = leader
	}
	return done
}
