package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// reassigned is a partition's replica state after a decision, the fields a
// reassignment moves.
type reassigned struct {
	replicas, isr, adding, removing []int32
	leader                          int32
}

func stateOf(p metadata.Partition) reassigned {
	return reassigned{replicas: p.Replicas, isr: p.ISR, adding: p.AddingReplicas, removing: p.RemovingReplicas, leader: p.Leader}
}

func (r reassigned) equal(o reassigned) bool {
	eq := func(a, b []int32) bool { return slices.Equal(a, b) || (len(a) == 0 && len(b) == 0) }
	return eq(r.replicas, o.replicas) && eq(r.isr, o.isr) && eq(r.adding, o.adding) && eq(r.removing, o.removing) && r.leader == o.leader
}

func TestReassignPartition(t *testing.T) {
	base := cluster(t, ids(1, 2, 3, 4, 5))
	// p0: 1,2,3 led by 1, all in sync. p1: moving 1,2,3 to 2,3,4 (4 not yet
	// in sync), led by 1. p2: moving 1 to 4 where 4 has joined the ISR and
	// then leads (it may, being in sync). p3: moving 1,2 to 4,5, neither in
	// sync yet, and 1 and 2 out of sync: a cancel has nobody clean left.
	base = withTopic(t, base, "t", topicID(1),
		part(1, ids(1, 2, 3), ids(1, 2, 3), nil),
		metadata.Partition{Replicas: ids(2, 3, 4, 1), ISR: ids(1, 2, 3), Leader: 1, AddingReplicas: ids(4), RemovingReplicas: ids(1)},
		metadata.Partition{Replicas: ids(4, 1), ISR: ids(1, 4), Leader: 4, AddingReplicas: ids(4), RemovingReplicas: ids(1)},
		metadata.Partition{Replicas: ids(4, 5, 1, 2), ISR: ids(4), Leader: 4, AddingReplicas: ids(4, 5), RemovingReplicas: ids(1, 2)},
	)
	allow := ReassignOptions{AllowReplicationFactorChange: true}
	tests := []struct {
		name   string
		rq     Reassignment
		opts   ReassignOptions
		want   *kerr.Error
		noRecs bool
		after  reassigned
	}{
		{name: "move one replica", rq: Reassignment{"t", 0, ids(2, 3, 4)}, opts: allow,
			after: reassigned{replicas: ids(2, 3, 4, 1), isr: ids(1, 2, 3), adding: ids(4), removing: ids(1), leader: 1}},
		{name: "reorder only completes at once", rq: Reassignment{"t", 0, ids(3, 2, 1)}, opts: allow,
			after: reassigned{replicas: ids(3, 2, 1), isr: ids(1, 2, 3), leader: 1}},
		{name: "same replicas is a no-op", rq: Reassignment{"t", 0, ids(1, 2, 3)}, opts: allow, noRecs: true},
		{name: "lower the replication factor completes at once", rq: Reassignment{"t", 0, ids(2, 3)}, opts: allow,
			after: reassigned{replicas: ids(2, 3), isr: ids(2, 3), leader: 2}},
		{name: "raise the replication factor", rq: Reassignment{"t", 0, ids(1, 2, 3, 4)}, opts: allow,
			after: reassigned{replicas: ids(1, 2, 3, 4), isr: ids(1, 2, 3), adding: ids(4), leader: 1}},
		{name: "replication factor change refused without AllowReplicationFactorChange", rq: Reassignment{"t", 0, ids(1, 2)}, want: kerr.InvalidReplicationFactor},
		{name: "same replication factor passes without AllowReplicationFactorChange", rq: Reassignment{"t", 0, ids(1, 2, 4)},
			after: reassigned{replicas: ids(1, 2, 4, 3), isr: ids(1, 2, 3), adding: ids(4), removing: ids(3), leader: 1}},
		{name: "replace a reassignment in progress keeps every current replica until done", rq: Reassignment{"t", 1, ids(2, 3, 5)}, opts: allow,
			after: reassigned{replicas: ids(2, 3, 5, 4, 1), isr: ids(1, 2, 3), adding: ids(5), removing: ids(4, 1), leader: 1}},
		// As Kafka's revert: the replicas minus the added ones, in their
		// current order (the original order is not kept).
		{name: "cancel reverts", rq: Reassignment{"t", 1, nil},
			after: reassigned{replicas: ids(2, 3, 1), isr: ids(1, 2, 3), leader: 1}},
		{name: "cancel moves leadership back from an added replica", rq: Reassignment{"t", 2, nil},
			after: reassigned{replicas: ids(1), isr: ids(1), leader: 1}},
		{name: "cancel without a reassignment", rq: Reassignment{"t", 0, nil}, want: kerr.NoReassignmentInProgress},
		{name: "cancel needing an unclean election", rq: Reassignment{"t", 3, nil}, want: kerr.InvalidReplicaAssignment},
		{name: "cancel with unclean election allowed", rq: Reassignment{"t", 3, nil},
			opts:  ReassignOptions{Unclean: func(*metadata.Topic) bool { return true }},
			after: reassigned{replicas: ids(1, 2), isr: ids(1), leader: 1}},
		{name: "empty target", rq: Reassignment{"t", 0, []int32{}}, opts: allow, want: kerr.InvalidReplicaAssignment},
		{name: "duplicate broker", rq: Reassignment{"t", 0, ids(1, 2, 2)}, opts: allow, want: kerr.InvalidReplicaAssignment},
		{name: "unregistered broker", rq: Reassignment{"t", 0, ids(1, 2, 9)}, opts: allow, want: kerr.InvalidReplicaAssignment},
		{name: "negative broker", rq: Reassignment{"t", 0, ids(1, 2, -1)}, opts: allow, want: kerr.InvalidReplicaAssignment},
		{name: "unknown topic", rq: Reassignment{"x", 0, ids(1)}, opts: allow, want: kerr.UnknownTopicOrPartition},
		{name: "unknown partition", rq: Reassignment{"t", 7, ids(1)}, opts: allow, want: kerr.UnknownTopicOrPartition},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ReassignPartition(base, tc.rq, tc.opts)
			wantCode(t, err, tc.want)
			if tc.want != nil {
				return
			}
			if tc.noRecs {
				if len(recs) != 0 {
					t.Fatalf("records %+v, want none", recs)
				}
				return
			}
			im := apply(t, base, recs...)
			if got := stateOf(mustPartition(t, im, "t", tc.rq.Partition)); !got.equal(tc.after) {
				t.Fatalf("after: %+v\nwant:  %+v", got, tc.after)
			}
		})
	}
}

// TestReassignmentCompletesWhenAddedReplicasJoinTheISR walks one move of a
// partition off its leader: the added replica joining the ISR (the leader's
// AlterPartition) completes it in the same record, with leadership moving
// to the first in-sync target replica and the removed one leaving.
func TestReassignmentCompletesWhenAddedReplicasJoinTheISR(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2, 3, 4)), "t", topicID(1), part(1, ids(1, 2, 3), ids(1, 2, 3), nil))
	im = apply(t, im, metadata.PartitionChange{TopicID: topicID(1), Partition: 0, ISR: ptr(ids(1, 2, 3))}) // partition epoch 1
	recs, err := ReassignPartition(im, Reassignment{"t", 0, ids(4, 2, 3)}, ReassignOptions{})
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	p := mustPartition(t, im, "t", 0)
	if p.LeaderEpoch != 0 {
		t.Fatalf("starting a reassignment changed the leader epoch: %+v", p)
	}

	// 2 drops out first: not every added replica is in, nothing completes.
	recs, err = AlterPartition(im, topicID(1), 0, p.LeaderEpoch, p.PartitionEpoch, ids(1, 3))
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	p = mustPartition(t, im, "t", 0)
	if !p.Reassigning() {
		t.Fatalf("completed before the added replica caught up: %+v", p)
	}

	// 4 joins: complete, with 2 (a target replica out of sync) kept as a
	// replica and 1 (the leader) replaced by 4, the first in-sync target.
	recs, err = AlterPartition(im, topicID(1), 0, p.LeaderEpoch, p.PartitionEpoch, ids(1, 3, 4))
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	p = mustPartition(t, im, "t", 0)
	want := reassigned{replicas: ids(4, 2, 3), isr: ids(3, 4), leader: 4}
	if got := stateOf(p); !got.equal(want) {
		t.Fatalf("after completion: %+v\nwant:  %+v", got, want)
	}
	if p.LeaderEpoch != 1 {
		t.Fatalf("leader moved without a new leader epoch: %+v", p)
	}
}

// TestReassignmentWaitsForAnActiveNewLeader: the leader is being removed
// and the only in-sync target replica is fenced (its ISR removal not yet
// decided): completing would hand leadership to a broker that cannot take
// it, so the reassignment stays pending.
func TestReassignmentWaitsForAnActiveNewLeader(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2)), "t", topicID(1),
		metadata.Partition{Replicas: ids(2, 1), ISR: ids(1), Leader: 1, AddingReplicas: ids(2), RemovingReplicas: ids(1)})
	im = fence(t, im, 2)
	p := mustPartition(t, im, "t", 0)
	if got := completeIfDone(im, p); !got.Reassigning() {
		t.Fatal("completed without the added replica in the ISR")
	}
	p.ISR = ids(1, 2)
	if got := completeIfDone(im, p); !got.Reassigning() || got.Leader != 1 {
		t.Fatalf("completed onto a fenced leader: %+v", got)
	}
}

// TestAlterPartitionReassignmentsDecidesEntriesInOrder: entries are decided
// one after the other against the image holding the earlier ones, and a
// refused entry does not stop the rest.
func TestAlterPartitionReassignmentsDecidesEntriesInOrder(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2, 3)), "t", topicID(1), part(1, ids(1, 2), ids(1, 2), nil), part(2, ids(2, 1), ids(2, 1), nil))
	recs, errs := AlterPartitionReassignments(im, []Reassignment{
		{"t", 0, ids(1, 3)},
		{"t", 1, ids(9, 1)},
		{"t", 0, nil}, // cancels the first entry's reassignment
		{"t", 1, ids(1, 2)},
	}, ReassignOptions{})
	wantCode(t, errs[0], nil)
	wantCode(t, errs[1], kerr.InvalidReplicaAssignment)
	wantCode(t, errs[2], nil)
	wantCode(t, errs[3], nil)
	im = apply(t, im, recs...)
	if got, want := stateOf(mustPartition(t, im, "t", 0)), (reassigned{replicas: ids(1, 2), isr: ids(1, 2), leader: 1}); !got.equal(want) {
		t.Fatalf("p0 %+v, want %+v", got, want)
	}
	if got, want := stateOf(mustPartition(t, im, "t", 1)), (reassigned{replicas: ids(1, 2), isr: ids(2, 1), leader: 2}); !got.equal(want) {
		t.Fatalf("p1 %+v, want %+v", got, want)
	}
}
