package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// AlterPartition decides a leader's request to change a partition's ISR
// (shrinking lagging followers out, or adding caught-up ones back).
//
// The request carries the leader epoch and partition epoch the leader last
// saw. A different leader epoch means the sender is not (or no longer) the
// leader: FENCED_LEADER_EPOCH. A different partition epoch means the
// partition changed since, so the proposal was computed from stale state:
// INVALID_UPDATE_VERSION. Either way the leader must refresh and retry.
//
// The new ISR must be distinct replicas including the leader (INVALID_REQUEST
// otherwise); replicas being added must be active (INELIGIBLE_REPLICA, as in
// KIP-841, so a fenced or shutting-down broker cannot rejoin). Replicas that
// join the ISR leave the ELR. An ISR equal to the current one as a set needs
// no record, so the result may be empty. An ISR that completes a
// reassignment completes it in the same record (completeIfDone).
func AlterPartition(im *metadata.Image, topicID metadata.TopicID, partition int32, leaderEpoch, partitionEpoch int32, newISR []int32) ([]metadata.Record, error) {
	t, ok := im.TopicByID(topicID)
	if !ok {
		return nil, errorf(kerr.UnknownTopicID, "topic id %s does not exist", topicID)
	}
	p, ok := t.Partition(partition)
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", t.Name, partition)
	}
	if leaderEpoch != p.LeaderEpoch {
		return nil, errorf(kerr.FencedLeaderEpoch, "%s/%d: leader epoch %d, current is %d", t.Name, partition, leaderEpoch, p.LeaderEpoch)
	}
	if p.Leader == metadata.NoLeader {
		return nil, errorf(kerr.NotLeaderForPartition, "%s/%d has no leader", t.Name, partition)
	}
	if partitionEpoch != p.PartitionEpoch {
		return nil, errorf(kerr.InvalidUpdateVersion, "%s/%d: partition epoch %d, current is %d", t.Name, partition, partitionEpoch, p.PartitionEpoch)
	}
	if len(newISR) == 0 || len(newISR) > len(p.Replicas) {
		return nil, errorf(kerr.InvalidRequest, "%s/%d: new isr has %d members, want 1..%d", t.Name, partition, len(newISR), len(p.Replicas))
	}
	for i, r := range newISR {
		if slices.Contains(newISR[:i], r) {
			return nil, errorf(kerr.InvalidRequest, "%s/%d: broker %d listed twice in new isr", t.Name, partition, r)
		}
		if !slices.Contains(p.Replicas, r) {
			return nil, errorf(kerr.InvalidRequest, "%s/%d: broker %d in new isr is not a replica", t.Name, partition, r)
		}
		if !slices.Contains(p.ISR, r) && !im.IsActive(r) {
			return nil, errorf(kerr.IneligibleReplica, "%s/%d: broker %d is fenced or shutting down and cannot join the isr", t.Name, partition, r)
		}
	}
	if !slices.Contains(newISR, p.Leader) {
		return nil, errorf(kerr.InvalidRequest, "%s/%d: new isr %v does not contain leader %d", t.Name, partition, newISR, p.Leader)
	}
	if sameMembers(newISR, p.ISR) {
		return nil, nil
	}
	next := p
	next.ISR = slices.Clone(newISR)
	next.ELR = slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return slices.Contains(newISR, r) })
	// A replica being added that joins the ISR may be the last one a
	// reassignment waited for.
	next = completeIfDone(im, next)
	return []metadata.Record{changeRecord(t.ID, p, next)}, nil
}

// sameMembers reports whether a and b hold the same distinct members, in
// any order.
func sameMembers[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
