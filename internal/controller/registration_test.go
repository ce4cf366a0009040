package controller

import (
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/metadata"
)

func dirID(b byte) metadata.DirectoryID { return metadata.DirectoryID{0: b, 15: 9} }

func dirs(b ...byte) []metadata.DirectoryID {
	out := make([]metadata.DirectoryID, len(b))
	for i, x := range b {
		out[i] = dirID(x)
	}
	return out
}

// writeCachingConfig is write.caching as a topic override (the broker
// default is false).
func writeCachingConfig(t *metadata.Topic) bool { return t.Configs["write.caching"] == "true" }

func TestRestartLoss(t *testing.T) {
	old := &metadata.Broker{ID: 2, Epoch: 40, LogDirs: dirs(1, 2)}
	tests := []struct {
		name string
		old  *metadata.Broker
		reg  Registration
		want elrLoss
	}{
		{"clean restart, same dirs", old, Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: 40}, keepELRs},
		{"dir order does not matter", old, Registration{LogDirs: dirs(2, 1), PreviousBrokerEpoch: 40}, keepELRs},
		{"unclean restart", old, Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: -1}, leaveWriteCachingELRs},
		{"clean shutdown of an older incarnation", old, Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: 39}, leaveWriteCachingELRs},
		{"replaced dir after a clean shutdown", old, Registration{LogDirs: dirs(1, 3), PreviousBrokerEpoch: 40}, leaveAllELRs},
		{"replaced dir after an unclean one", old, Registration{LogDirs: dirs(3, 2), PreviousBrokerEpoch: -1}, leaveAllELRs},
		{"added dir", old, Registration{LogDirs: dirs(1, 2, 3), PreviousBrokerEpoch: 40}, leaveAllELRs},
		{"dirs not sent", old, Registration{PreviousBrokerEpoch: 40}, keepELRs},
		{"no dirs known before", &metadata.Broker{ID: 2, Epoch: 40}, Registration{LogDirs: dirs(7), PreviousBrokerEpoch: 40}, keepELRs},
		{"first registration", nil, Registration{LogDirs: dirs(1), PreviousBrokerEpoch: -1}, leaveWriteCachingELRs},
		{"predecessor died before learning its epoch", &metadata.Broker{ID: 2, Epoch: 40, VouchedEpoch: 31, LogDirs: dirs(1, 2)},
			Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: 31}, keepELRs},
		{"older than what the predecessor vouched for", &metadata.Broker{ID: 2, Epoch: 40, VouchedEpoch: 31, LogDirs: dirs(1, 2)},
			Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: 30}, leaveWriteCachingELRs},
		{"predecessor vouched for nothing", &metadata.Broker{ID: 2, Epoch: 40, VouchedEpoch: -1, LogDirs: dirs(1, 2)},
			Registration{LogDirs: dirs(1, 2), PreviousBrokerEpoch: -1}, leaveWriteCachingELRs},
		{"stale vouch and a replaced dir", &metadata.Broker{ID: 2, Epoch: 40, VouchedEpoch: 31, LogDirs: dirs(1, 2)},
			Registration{LogDirs: dirs(1, 3), PreviousBrokerEpoch: 31}, leaveAllELRs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := restartLoss(tc.old, tc.reg); got != tc.want {
				t.Fatalf("restartLoss = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRegisterBrokerELR: broker 2, registered with directories {1}, was the
// last ISR member of a partition of a default topic and of a write.caching
// topic and went to both ELRs; broker 1, the other replica, is down. What
// broker 2's re-registration says decides whether it may lead them again.
func TestRegisterBrokerELR(t *testing.T) {
	const prevEpoch = 200
	tests := []struct {
		name       string
		reg        Registration
		wantPlain  int32 // leader of the default topic's partition afterwards
		wantCached int32 // leader of the write.caching topic's partition
	}{
		{"clean restart leads both", Registration{LogDirs: dirs(1), PreviousBrokerEpoch: prevEpoch}, 2, 2},
		{"unclean restart keeps the fsynced topic's elr", Registration{LogDirs: dirs(1), PreviousBrokerEpoch: -1}, 2, metadata.NoLeader},
		{"replaced dir leaves every elr", Registration{LogDirs: dirs(5), PreviousBrokerEpoch: prevEpoch}, metadata.NoLeader, metadata.NoLeader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im := cluster(t, ids(1, 2))
			im = apply(t, im, metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: prevEpoch, LogDirs: dirs(1)}})
			im = withTopic(t, im, "plain", topicID(1), part(-1, ids(1, 2), nil, ids(2)))
			im = withTopic(t, im, "cached", topicID(2), part(-1, ids(1, 2), nil, ids(2)))
			v := "true"
			im = apply(t, im, metadata.SetTopicConfig{TopicID: topicID(2), Key: "write.caching", Value: &v})
			im = fence(t, fence(t, im, 1), 2)

			tc.reg.ID = 2
			recs, epoch, err := RegisterBroker(im, tc.reg, writeCachingConfig, nil)
			if err != nil {
				t.Fatal(err)
			}
			im = apply(t, im, recs...)
			if b, _ := im.Broker(2); b.Epoch != epoch || epoch <= prevEpoch || !slices.Equal(b.LogDirs, tc.reg.LogDirs) {
				t.Fatalf("registered %+v, returned epoch %d", b, epoch)
			}
			for _, c := range []struct {
				topic string
				want  int32
			}{{"plain", tc.wantPlain}, {"cached", tc.wantCached}} {
				p := mustPartition(t, im, c.topic, 0)
				if p.Leader != c.want {
					t.Errorf("%s: leader %d, want %d (%+v)", c.topic, p.Leader, c.want, p)
				}
				if c.want == metadata.NoLeader && slices.Contains(p.ELR, 2) {
					t.Errorf("%s: broker 2 still in the ELR %v", c.topic, p.ELR)
				}
			}
		})
	}
}

// TestRegisterBrokerAfterWholeClusterPowerLoss: every broker lost power at
// once and none shut down cleanly. Records were fsynced before they were
// acknowledged, so the ELR members still hold them and the first of them
// to come back leads at once.
func TestRegisterBrokerAfterWholeClusterPowerLoss(t *testing.T) {
	im := cluster(t, ids(1, 2, 3))
	im = withTopic(t, im, "t", topicID(1), part(1, ids(1, 2, 3), ids(1, 2, 3), nil), part(3, ids(3, 1, 2), ids(3, 2), nil))
	for _, id := range ids(2, 3, 1) {
		recs, err := FenceBroker(im, id)
		if err != nil {
			t.Fatal(err)
		}
		im = apply(t, im, recs...)
	}
	for i := range 2 {
		if p := mustPartition(t, im, "t", int32(i)); p.Leader != metadata.NoLeader || len(p.ELR) != 1 {
			t.Fatalf("partition %d after the power loss: %+v", i, p)
		}
	}
	recs, _, err := RegisterBroker(im, Registration{ID: 1, PreviousBrokerEpoch: -1}, writeCachingConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	im = apply(t, im, recs...)
	// Partition 0's ELR is broker 1 (fenced last); partition 1's is broker
	// 3, which is still down.
	if p := mustPartition(t, im, "t", 0); p.Leader != 1 {
		t.Fatalf("partition 0 not led by broker 1 from its ELR: %+v", p)
	}
	if p := mustPartition(t, im, "t", 1); p.Leader != metadata.NoLeader || !slices.Equal(p.ELR, ids(3)) {
		t.Fatalf("partition 1 changed though its ELR member is down: %+v", p)
	}
}

// TestRegisterBrokerStillInISRWithReplacedDir: the broker restarted with a
// new disk before its session expired, so it is still the partition's only
// ISR member. Fencing its old incarnation moves it to the ELR, and the new
// directory set takes it out of that too: the partition stays leaderless
// rather than led by an empty log.
func TestRegisterBrokerStillInISRWithReplacedDir(t *testing.T) {
	im := cluster(t, ids(1, 2))
	im = apply(t, im, metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: 200, LogDirs: dirs(1)}})
	im = withTopic(t, im, "t", topicID(1), part(2, ids(1, 2), ids(2), nil))
	im = fence(t, im, 1)
	recs, _, err := RegisterBroker(im, Registration{ID: 2, LogDirs: dirs(2), PreviousBrokerEpoch: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	im = apply(t, im, recs...)
	p := mustPartition(t, im, "t", 0)
	if p.Leader != metadata.NoLeader || len(p.ISR) != 0 || len(p.ELR) != 0 {
		t.Fatalf("partition after re-registration with a new disk: %+v", p)
	}
	if b, _ := im.Broker(2); b.Fenced || b.Epoch <= 200 {
		t.Fatalf("broker 2 after re-registration: %+v", b)
	}
}

// TestRegisterBrokerDiedBeforeLearningItsEpoch (seed 5048): broker 2 is the
// only ELR member of a write.caching partition. Its next process registers,
// vouching for its last epoch, and leads again; it dies (same kernel boot,
// so nothing it wrote is lost) after the controller committed that
// registration but before the answer told it the new epoch, so its state
// file still vouches for the old one. Fenced, it is the ELR again, and its
// successor, sending the same old epoch, must be able to lead: leaving the
// ELR would strand the partition with neither ISR nor ELR.
func TestRegisterBrokerDiedBeforeLearningItsEpoch(t *testing.T) {
	const prevEpoch = 200
	im := cluster(t, ids(1, 2))
	im = apply(t, im, metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: prevEpoch, LogDirs: dirs(1)}})
	im = withTopic(t, im, "cached", topicID(2), part(-1, ids(1, 2), nil, ids(2)))
	v := "true"
	im = apply(t, im, metadata.SetTopicConfig{TopicID: topicID(2), Key: "write.caching", Value: &v})
	im = fence(t, fence(t, im, 1), 2)

	reg := Registration{ID: 2, LogDirs: dirs(1), PreviousBrokerEpoch: prevEpoch}
	recs, unlearned, err := RegisterBroker(im, reg, writeCachingConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	im = apply(t, im, recs...)
	if p := mustPartition(t, im, "cached", 0); p.Leader != 2 {
		t.Fatalf("first re-registration: %+v", p)
	}
	im = fenceBroker(t, im, 2) // the session of epoch unlearned expires
	if p := mustPartition(t, im, "cached", 0); !slices.Equal(p.ELR, ids(2)) || len(p.ISR) != 0 {
		t.Fatalf("after fencing epoch %d: %+v", unlearned, p)
	}

	recs, _, err = RegisterBroker(im, reg, writeCachingConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	im = apply(t, im, recs...)
	if p := mustPartition(t, im, "cached", 0); p.Leader != 2 || !slices.Equal(p.ISR, ids(2)) {
		t.Fatalf("successor vouching for epoch %d again (the dead process had %d): %+v", prevEpoch, unlearned, p)
	}

	// A vouch older still is a state file from before that: leave the ELR.
	im = fenceBroker(t, im, 2)
	recs, _, err = RegisterBroker(im, Registration{ID: 2, LogDirs: dirs(1), PreviousBrokerEpoch: prevEpoch - 1}, writeCachingConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	im = apply(t, im, recs...)
	if p := mustPartition(t, im, "cached", 0); p.Leader != metadata.NoLeader || len(p.ELR) != 0 {
		t.Fatalf("stale vouch kept the ELR: %+v", p)
	}
}

// fenceBroker applies what FenceBroker decides (fence only records it).
func fenceBroker(t *testing.T, im *metadata.Image, id int32) *metadata.Image {
	t.Helper()
	recs, err := FenceBroker(im, id)
	if err != nil {
		t.Fatal(err)
	}
	return apply(t, im, recs...)
}
