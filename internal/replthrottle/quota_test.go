package replthrottle

import (
	"testing"

	"github.com/skein-log/skein/internal/metadata"
)

// TestQuotaThrottlesOutOfISRListedReplicas: the leader throttles only a
// follower its topic's leader list names (with the leader's id) and that
// is out of the ISR, the follower only its own listed replica out of the
// ISR; an unlimited rate throttles nothing; Use takes new rates only from
// a new image.
func TestQuotaThrottlesOutOfISRListedReplicas(t *testing.T) {
	id := metadata.TopicID{1}
	im, err := metadata.Empty("c").Apply(metadata.CreateTopic{Name: "t", ID: id,
		Configs:    map[string]string{LeaderReplicasKey: "0:1", FollowerReplicasKey: "0:3"},
		Partitions: []metadata.Partition{{Index: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	rates := func(l, f int64) func(*metadata.Image) (int64, int64) {
		return func(*metadata.Image) (int64, int64) { return l, f }
	}
	leader := NewQuota(1, Unlimited, Unlimited)
	if leader.LeaderThrottled(im, id, 0, 3) {
		t.Error("an unlimited leader throttles")
	}
	leader.Use(im, rates(1000, 1000))
	if !leader.LeaderThrottled(im, id, 0, 3) {
		t.Error("leader 1 does not throttle out-of-ISR follower 3")
	}
	if leader.LeaderThrottled(im, id, 0, 2) {
		t.Error("leader 1 throttles in-sync follower 2")
	}
	if leader.FollowerThrottled(im, id, 0) {
		t.Error("broker 1 throttles itself as a follower; its id is not in the follower list")
	}
	leader.Use(im, rates(5, 5)) // the same image: the rates stay
	if s := leader.Stats(); s.LeaderRate != 1000 {
		t.Errorf("rate %d after Use of the same image", s.LeaderRate)
	}
	if got := leader.LeaderAllowance(0); got != 1000 {
		t.Errorf("allowance %d, want a full second's 1000", got)
	}
	leader.LeaderTook(1500, 0)
	if got := leader.LeaderAllowance(0); got != 0 {
		t.Errorf("allowance %d in debt", got)
	}
	if s := leader.Stats(); s.LeaderBytes != 1500 {
		t.Errorf("leader bytes %d", s.LeaderBytes)
	}
	follower := NewQuota(3, Unlimited, 1000)
	if !follower.FollowerThrottled(im, id, 0) {
		t.Error("follower 3 out of the ISR is not throttled")
	}
	follower.FollowerTook(2000, 0)
	if w := follower.FollowerWaitMs(0); w != 1001 {
		t.Errorf("follower wait %d ms, want 1001", w)
	}
	im2, err := im.Apply(metadata.PartitionChange{TopicID: id, Partition: 0, ISR: &[]int32{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if follower.FollowerThrottled(im2, id, 0) || leader.LeaderThrottled(im2, id, 0, 3) {
		t.Error("a replica back in the ISR is still throttled")
	}
}
