package controller

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

func aliveSet(alive ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(alive, id) }
}

func TestElectLeader(t *testing.T) {
	tests := []struct {
		name        string
		p           metadata.Partition
		alive       []int32
		unclean     bool
		wantLeader  int32
		wantFromISR bool
		wantOK      bool
	}{
		{"first alive isr member in replica order", part(1, ids(1, 2, 3), ids(3, 2), nil), ids(2, 3), false, 2, true, true},
		{"current leader gets no preference", part(3, ids(1, 2, 3), ids(1, 2, 3), nil), ids(1, 2, 3), false, 1, true, true},
		{"skips dead isr members", part(1, ids(1, 2, 3), ids(1, 2), nil), ids(3, 2), false, 2, true, true},
		{"falls back to elr", part(-1, ids(1, 2, 3), ids(1), ids(3)), ids(2, 3), false, 3, false, true},
		{"isr before elr", part(-1, ids(1, 2, 3), ids(2), ids(1)), ids(1, 2), false, 2, true, true},
		{"no clean candidate", part(-1, ids(1, 2, 3), ids(1), nil), ids(2, 3), false, -1, false, false},
		{"unclean picks first alive replica", part(-1, ids(1, 2, 3), ids(1), nil), ids(3, 2), true, 2, false, true},
		{"unclean still prefers isr", part(-1, ids(1, 2, 3), ids(3), nil), ids(2, 3), true, 3, true, true},
		{"nobody alive", part(-1, ids(1, 2), ids(1), ids(2)), nil, true, -1, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leader, fromISR, ok := ElectLeader(tc.p, aliveSet(tc.alive...), tc.unclean)
			if leader != tc.wantLeader || fromISR != tc.wantFromISR || ok != tc.wantOK {
				t.Fatalf("ElectLeader = (%d, %v, %v), want (%d, %v, %v)", leader, fromISR, ok, tc.wantLeader, tc.wantFromISR, tc.wantOK)
			}
		})
	}
}

func TestFenceBroker(t *testing.T) {
	tests := []struct {
		name  string
		parts []metadata.Partition
		fence int32
		also  []int32 // brokers fenced beforehand
		want  []metadata.Partition
	}{
		{
			name:  "follower leaves isr",
			parts: []metadata.Partition{part(1, ids(1, 2, 3), ids(1, 2, 3), nil)},
			fence: 2,
			want:  []metadata.Partition{{Replicas: ids(1, 2, 3), ISR: ids(1, 3), Leader: 1, PartitionEpoch: 1}},
		},
		{
			name:  "leader moves to next isr member in replica order",
			parts: []metadata.Partition{part(1, ids(1, 2, 3), ids(1, 3, 2), nil)},
			fence: 1,
			want:  []metadata.Partition{{Replicas: ids(1, 2, 3), ISR: ids(3, 2), Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}},
		},
		{
			name:  "last isr member moves to elr and partition goes leaderless",
			parts: []metadata.Partition{part(1, ids(1, 2), ids(1), nil)},
			fence: 1,
			want:  []metadata.Partition{{Replicas: ids(1, 2), ISR: ids(), ELR: ids(1), Leader: -1, LeaderEpoch: 1, PartitionEpoch: 1}},
		},
		{
			name:  "leader moves to a live elr member when the isr empties",
			parts: []metadata.Partition{part(1, ids(1, 2), ids(1), ids(2))},
			fence: 1,
			want:  []metadata.Partition{{Replicas: ids(1, 2), ISR: ids(2), ELR: ids(1), Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}},
		},
		{
			name:  "no live isr member leaves the partition leaderless",
			parts: []metadata.Partition{part(1, ids(1, 2, 3), ids(1, 2), nil)},
			fence: 1,
			also:  ids(2),
			want:  []metadata.Partition{{Replicas: ids(1, 2, 3), ISR: ids(2), Leader: -1, LeaderEpoch: 1, PartitionEpoch: 1}},
		},
		{
			name:  "partitions without the broker in isr are untouched",
			parts: []metadata.Partition{part(2, ids(1, 2), ids(2), ids(1)), part(3, ids(3), ids(3), nil)},
			fence: 1,
			want: []metadata.Partition{
				{Index: 0, Replicas: ids(1, 2), ISR: ids(2), ELR: ids(1), Leader: 2},
				{Index: 1, Replicas: ids(3), ISR: ids(3), Leader: 3},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im := withTopic(t, cluster(t, ids(1, 2, 3)), "t", topicID(1), tc.parts...)
			for _, id := range tc.also {
				im = fence(t, im, id)
			}
			recs, err := FenceBroker(im, tc.fence)
			wantCode(t, err, nil)
			if fb, ok := recs[0].(metadata.FenceBroker); !ok || fb.ID != tc.fence {
				t.Fatalf("first record = %+v, want FenceBroker of %d", recs[0], tc.fence)
			}
			im = apply(t, im, recs...)
			tp, _ := im.Topic("t")
			for i := range tc.want {
				tc.want[i].Index = int32(i)
			}
			if !equalPartitions(tp.Partitions, tc.want) {
				t.Fatalf("partitions\n got %+v\nwant %+v", tp.Partitions, tc.want)
			}
			if im.IsActive(tc.fence) {
				t.Fatal("broker still active")
			}
			// Fencing again changes nothing more.
			again, err := FenceBroker(im, tc.fence)
			if err != nil || len(again) != 0 {
				t.Fatalf("second FenceBroker = %+v, %v", again, err)
			}
		})
	}
}

// equalPartitions compares partitions treating nil and empty slices alike.
func equalPartitions(a, b []metadata.Partition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !slices.Equal(x.Replicas, y.Replicas) || !slices.Equal(x.ISR, y.ISR) || !slices.Equal(x.ELR, y.ELR) {
			return false
		}
		if x.Index != y.Index || x.Leader != y.Leader || x.LeaderEpoch != y.LeaderEpoch || x.PartitionEpoch != y.PartitionEpoch {
			return false
		}
	}
	return true
}

func TestFenceBrokerUnknown(t *testing.T) {
	_, err := FenceBroker(cluster(t, ids(1)), 9)
	wantCode(t, err, kerr.BrokerIDNotRegistered)
	_, err = UnfenceBroker(cluster(t, ids(1)), 9)
	wantCode(t, err, kerr.BrokerIDNotRegistered)
	_, err = BeginControlledShutdown(cluster(t, ids(1)), 9)
	wantCode(t, err, kerr.BrokerIDNotRegistered)
}

func TestBeginControlledShutdownMovesLeadership(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2)), "t", topicID(1),
		part(1, ids(1, 2), ids(1, 2), nil),
		part(2, ids(2, 1), ids(2, 1), nil))
	recs, err := BeginControlledShutdown(im, 1)
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	b, _ := im.Broker(1)
	if !b.InControlledShutdown || b.Fenced {
		t.Fatalf("broker 1 = %+v", b)
	}
	for i := range int32(2) {
		p := mustPartition(t, im, "t", i)
		if p.Leader != 2 || !slices.Equal(p.ISR, ids(2)) {
			t.Fatalf("partition %d = %+v", i, p)
		}
	}
}

// TestFenceThenUnfenceRecoversCleanly walks a partition through losing every
// replica and getting its last ISR member back: the ELR keeps that member
// eligible, so the election is clean and no unclean election is needed.
func TestFenceThenUnfenceRecoversCleanly(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2)), "t", topicID(1), part(1, ids(1, 2), ids(1, 2), nil))
	for _, id := range ids(2, 1) {
		recs, err := FenceBroker(im, id)
		wantCode(t, err, nil)
		im = apply(t, im, recs...)
	}
	p := mustPartition(t, im, "t", 0)
	if p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, ids(1)) {
		t.Fatalf("after fencing both: %+v", p)
	}
	// Broker 2 returns first: it is neither in the ISR nor the ELR.
	recs, err := UnfenceBroker(im, 2)
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	if p := mustPartition(t, im, "t", 0); p.Leader != -1 {
		t.Fatalf("broker 2 elected without being eligible: %+v", p)
	}
	// Broker 1 returns: elected from the ELR and becomes the whole ISR.
	recs, err = UnfenceBroker(im, 1)
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	p = mustPartition(t, im, "t", 0)
	if p.Leader != 1 || !slices.Equal(p.ISR, ids(1)) || len(p.ELR) != 0 {
		t.Fatalf("after broker 1 returns: %+v", p)
	}
	if !im.IsActive(1) || !im.IsActive(2) {
		t.Fatal("brokers not active after unfencing")
	}
}

func TestElectLeaderless(t *testing.T) {
	im := cluster(t, ids(1, 2, 3))
	im = withTopic(t, im, "clean", topicID(1), part(-1, ids(1, 2), ids(), ids(2)))
	im = withTopic(t, im, "dirty", topicID(2), part(-1, ids(3, 1), ids(), nil))
	im = withTopic(t, im, "strict", topicID(3), part(-1, ids(3, 1), ids(), nil))
	recs := ElectLeaderless(im, func(tp *metadata.Topic) bool { return tp.Name == "dirty" })
	im = apply(t, im, recs...)
	want := map[string]metadata.Partition{
		"clean":  {Replicas: ids(1, 2), ISR: ids(2), ELR: ids(), Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1},
		"dirty":  {Replicas: ids(3, 1), ISR: ids(3), ELR: ids(), Leader: 3, LeaderEpoch: 1, PartitionEpoch: 1},
		"strict": {Replicas: ids(3, 1), ISR: ids(), Leader: -1},
	}
	for name, w := range want {
		if got := mustPartition(t, im, name, 0); !equalPartitions([]metadata.Partition{got}, []metadata.Partition{w}) {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
	if again := ElectLeaderless(im, nil); len(again) != 0 {
		t.Fatalf("second pass elected again: %+v", again)
	}
}

func TestPreferredLeaderElection(t *testing.T) {
	im := cluster(t, ids(1, 2, 3))
	im = withTopic(t, im, "t", topicID(1),
		part(2, ids(1, 2), ids(1, 2), nil), // preferred 1 is eligible: move
		part(1, ids(1, 2), ids(1, 2), nil), // already preferred
		part(3, ids(2, 3), ids(3), nil),    // preferred 2 not in ISR
		part(1, ids(3, 1), ids(3, 1), nil), // preferred 3 will be fenced
	)
	im = fence(t, im, 3)
	recs := PreferredLeaderElection(im)
	want := []metadata.Record{metadata.PartitionChange{TopicID: topicID(1), Partition: 0, Leader: ptr[int32](1)}}
	if !reflect.DeepEqual(recs, want) {
		t.Fatalf("records = %+v, want %+v", recs, want)
	}
	im = apply(t, im, recs...)
	if p := mustPartition(t, im, "t", 0); p.Leader != 1 || p.LeaderEpoch != 1 {
		t.Fatalf("partition 0 = %+v", p)
	}
}

// TestBeginControlledShutdownLeavesEveryISR is the decision a broker whose
// log directory failed gets (node/diskfail.go): it leaves every ISR, each
// partition it led gets the next ISR member in replica order, a partition
// whose whole ISR it was keeps it in the ELR and has no leader (no unclean
// election), and partitions where it is only an out-of-sync replica are
// left alone. The ISR may drop below min.insync.replicas: the new leader
// then refuses acks=all until the broker is back, which is what keeps an
// acknowledged record on min.insync.replicas disks.
func TestBeginControlledShutdownLeavesEveryISR(t *testing.T) {
	im := withTopic(t, cluster(t, ids(1, 2, 3)), "t", topicID(1),
		part(3, ids(3, 1, 2), ids(3, 2, 1), nil), // led: the next ISR member in replica order leads
		part(1, ids(1, 3, 2), ids(1, 3, 2), nil), // follower: leaves the ISR
		part(3, ids(3, 1), ids(3), nil),          // the whole ISR: to the ELR, leaderless
		part(1, ids(1, 3), ids(1), nil),          // not in the ISR: untouched
	)
	recs, err := BeginControlledShutdown(im, 3)
	wantCode(t, err, nil)
	im = apply(t, im, recs...)
	want := []metadata.Partition{
		{Leader: 1, ISR: ids(2, 1)},
		{Leader: 1, ISR: ids(1, 2)},
		{Leader: metadata.NoLeader, ISR: ids(), ELR: ids(3)},
		{Leader: 1, ISR: ids(1)},
	}
	for i, w := range want {
		p := mustPartition(t, im, "t", int32(i))
		if p.Leader != w.Leader || !slices.Equal(p.ISR, w.ISR) || !slices.Equal(p.ELR, w.ELR) {
			t.Errorf("partition %d: leader %d isr %v elr %v; want leader %d isr %v elr %v", i, p.Leader, p.ISR, p.ELR, w.Leader, w.ISR, w.ELR)
		}
	}
	if len(recs) != 1+3 {
		t.Errorf("%d records, want the shutdown record and three partition changes: %+v", len(recs), recs)
	}
}

// BenchmarkElectLeaderlessNone is the active controller's maintenance
// pass (ten a second) over 10,000 partitions of RF=3 in topics of 100
// that all have a leader: the idle case, which elects nothing. unclean
// resolves the topic's configuration, as the controller's does.
func BenchmarkElectLeaderlessNone(b *testing.B) {
	im := cluster(b, ids(1, 2, 3))
	for n := range 100 {
		parts := make([]metadata.Partition, 100)
		for i := range parts {
			r := ids(int32(1+(n+i)%3), int32(1+(n+i+1)%3), int32(1+(n+i+2)%3))
			parts[i] = part(r[0], r, r, nil)
		}
		im = withTopic(b, im, fmt.Sprintf("t%d", n), metadata.TopicID{0: byte(n), 1: byte(n >> 8), 15: 9}, parts...)
	}
	brokerCfg, err := config.NewBroker(nil)
	if err != nil {
		b.Fatal(err)
	}
	resolved := 0
	unclean := func(t *metadata.Topic) bool {
		resolved++
		tc, err := config.ResolveTopic(brokerCfg, t.Configs)
		return err == nil && tc.UncleanLeaderElection
	}
	b.ReportAllocs()
	for b.Loop() {
		if recs := ElectLeaderless(im, unclean); len(recs) != 0 {
			b.Fatalf("elected %d", len(recs))
		}
	}
	if resolved != 0 {
		b.Fatalf("unclean asked %d times with no leaderless partition", resolved)
	}
}
