package metadata

import (
	"maps"
	"slices"
)

// Reconciled remembers the image a broker last brought its replicas in
// line with, so that the next reconcile visits only what changed since
// (Changes) rather than every partition of the cluster on every image: at
// 10,000 partitions a full walk per committed entry is most of a broker's
// CPU while topics are created or ISRs change. Node and simulator both
// reconcile through it.
//
// The zero value has reconciled nothing: its first Changes is Full.
type Reconciled struct {
	im       *Image
	epoch    int64
	caughtUp bool
}

// ChangedPartition is one partition entry a reconcile must visit.
type ChangedPartition struct {
	Topic     *Topic
	Partition Partition
}

// Changes is what a reconcile of an image must visit.
type Changes struct {
	// Full asks for every partition: nothing was reconciled yet, the last
	// reconcile failed (Forget), or what every replica's role depends on
	// changed (this broker's registration epoch, or whether the image is
	// caught up for it: ReplicaRole).
	Full bool
	// Partitions are the entries of the new image that are new or differ
	// from the reconciled image's (all of a topic whose configs changed),
	// topics in name order; empty when Full.
	Partitions []ChangedPartition
	// Removed are the topics the reconciled image had and the new one
	// lacks; empty when Full.
	Removed []TopicID
}

// Changes compares next, for broker id registered at epoch, with the
// image last recorded by Done. Copy-on-write images share every topic an
// Apply did not change, so an unchanged topic costs one pointer compare.
func (r *Reconciled) Changes(next *Image, id int32, epoch int64) Changes {
	if r.im == nil || r.epoch != epoch || r.caughtUp != next.CaughtUpFor(id, epoch) {
		return Changes{Full: true}
	}
	var c Changes
	for _, t := range next.sortedTopics {
		old, ok := r.im.topicsByID[t.ID]
		if ok && old == t {
			continue
		}
		all := !ok || !maps.Equal(old.Configs, t.Configs)
		for _, p := range t.Partitions {
			if all || int(p.Index) >= len(old.Partitions) || !p.Equal(old.Partitions[p.Index]) {
				c.Partitions = append(c.Partitions, ChangedPartition{t, p})
			}
		}
	}
	if len(r.im.topicsByID) > 0 {
		for tid := range r.im.topicsByID {
			if _, ok := next.topicsByID[tid]; !ok {
				c.Removed = append(c.Removed, tid)
			}
		}
		slices.SortFunc(c.Removed, func(a, b TopicID) int { return slices.Compare(a[:], b[:]) })
	}
	return c
}

// Done records next as reconciled for broker id at epoch: the next
// Changes is relative to it.
func (r *Reconciled) Done(next *Image, id int32, epoch int64) {
	r.im, r.epoch, r.caughtUp = next, epoch, next.CaughtUpFor(id, epoch)
}

// Forget makes the next Changes Full: after a reconcile that failed
// somewhere (a log that did not open, an apply refused), so that it is
// tried again.
func (r *Reconciled) Forget() { r.im = nil }

// Equal reports whether p and q are the same entry.
func (p Partition) Equal(q Partition) bool {
	return p.Index == q.Index && p.Leader == q.Leader && p.LeaderEpoch == q.LeaderEpoch &&
		p.PartitionEpoch == q.PartitionEpoch && slices.Equal(p.Replicas, q.Replicas) &&
		slices.Equal(p.ISR, q.ISR) && slices.Equal(p.ELR, q.ELR) &&
		slices.Equal(p.AddingReplicas, q.AddingReplicas) && slices.Equal(p.RemovingReplicas, q.RemovingReplicas)
}
