package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

func TestAlterPartition(t *testing.T) {
	// Partition 0: leader 1, ISR {1,2}, ELR {3}, epochs bumped once by a
	// change so that leader epoch 1 / partition epoch 1 are current.
	base := cluster(t, ids(1, 2, 3, 4))
	base = withTopic(t, base, "t", topicID(1), part(2, ids(1, 2, 3, 4), ids(1, 2), ids(3)))
	base = apply(t, base, metadata.PartitionChange{TopicID: topicID(1), Partition: 0, Leader: ptr[int32](1)})
	base = fence(t, base, 4)

	tests := []struct {
		name           string
		topic          metadata.TopicID
		partition      int32
		leaderEpoch    int32
		partitionEpoch int32
		isr            []int32
		want           *kerr.Error
		wantISR        []int32 // nil: no record expected
		wantELR        []int32
	}{
		{name: "shrink", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1), wantISR: ids(1), wantELR: ids(3)},
		{name: "expand with elr member leaves elr", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1, 2, 3), wantISR: ids(1, 2, 3), wantELR: ids()},
		{name: "same set is a no-op", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(2, 1)},
		{name: "unknown topic", topic: topicID(9), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1), want: kerr.UnknownTopicID},
		{name: "unknown partition", topic: topicID(1), partition: 1, leaderEpoch: 1, partitionEpoch: 1, isr: ids(1), want: kerr.UnknownTopicOrPartition},
		{name: "stale leader epoch", topic: topicID(1), leaderEpoch: 0, partitionEpoch: 1, isr: ids(1), want: kerr.FencedLeaderEpoch},
		{name: "future leader epoch", topic: topicID(1), leaderEpoch: 2, partitionEpoch: 1, isr: ids(1), want: kerr.FencedLeaderEpoch},
		{name: "stale partition epoch", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 0, isr: ids(1), want: kerr.InvalidUpdateVersion},
		{name: "empty isr", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(), want: kerr.InvalidRequest},
		{name: "isr without leader", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(2), want: kerr.InvalidRequest},
		{name: "duplicate member", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1, 1), want: kerr.InvalidRequest},
		{name: "non-replica member", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1, 7), want: kerr.InvalidRequest},
		{name: "fenced broker cannot join", topic: topicID(1), leaderEpoch: 1, partitionEpoch: 1, isr: ids(1, 4), want: kerr.IneligibleReplica},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := AlterPartition(base, tc.topic, tc.partition, tc.leaderEpoch, tc.partitionEpoch, tc.isr)
			wantCode(t, err, tc.want)
			if tc.want != nil {
				return
			}
			if tc.wantISR == nil {
				if len(recs) != 0 {
					t.Fatalf("records %+v, want none", recs)
				}
				return
			}
			im := apply(t, base, recs...)
			p := mustPartition(t, im, "t", 0)
			if !slices.Equal(p.ISR, tc.wantISR) || !slices.Equal(p.ELR, tc.wantELR) || p.Leader != 1 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 {
				t.Fatalf("partition = %+v", p)
			}
			// The same request again is now stale.
			_, err = AlterPartition(im, tc.topic, tc.partition, tc.leaderEpoch, tc.partitionEpoch, tc.isr)
			wantCode(t, err, kerr.InvalidUpdateVersion)
		})
	}
}

func TestAlterPartitionLeaderless(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1)), "t", topicID(1), part(-1, ids(1), ids(), ids(1)))
	_, err := AlterPartition(im, topicID(1), 0, 0, 0, ids(1))
	wantCode(t, err, kerr.NotLeaderForPartition)
}
