package metadata

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestApplyAccepts(t *testing.T) {
	tests := []struct {
		name  string
		recs  []Record
		check func(t *testing.T, im *Image)
	}{
		{
			name: "register new broker",
			recs: []Record{broker(4, 1)},
			check: func(t *testing.T, im *Image) {
				b, ok := im.Broker(4)
				if !ok || b.Epoch != 1 || len(b.Endpoints) != 1 {
					t.Fatalf("broker 4 = %+v, %v", b, ok)
				}
			},
		},
		{
			name: "re-register with newer epoch replaces",
			recs: []Record{RegisterBroker{Broker: Broker{ID: 1, Epoch: 11, Rack: "new", Fenced: true}}},
			check: func(t *testing.T, im *Image) {
				b, _ := im.Broker(1)
				if b.Rack != "new" || b.Epoch != 11 || !b.Fenced {
					t.Fatalf("broker 1 = %+v", b)
				}
			},
		},
		{
			name: "fence, shutdown, unfence",
			recs: []Record{FenceBroker{ID: 2, Epoch: 20}},
			check: func(t *testing.T, im *Image) {
				b, _ := im.Broker(2)
				if !b.Fenced || im.IsActive(2) {
					t.Fatalf("broker 2 = %+v", b)
				}
				im = mustApply(t, im, UnfenceBroker{ID: 2, Epoch: 20}, BeginControlledShutdown{ID: 2, Epoch: 20})
				b, _ = im.Broker(2)
				if b.Fenced || !b.InControlledShutdown || im.IsActive(2) {
					t.Fatalf("broker 2 = %+v", b)
				}
				im = mustApply(t, im, UnfenceBroker{ID: 2, Epoch: 20})
				if !im.IsActive(2) {
					t.Fatal("broker 2 not active after unfence")
				}
			},
		},
		{
			name: "unregister",
			recs: []Record{UnregisterBroker{ID: 3}},
			check: func(t *testing.T, im *Image) {
				if _, ok := im.Broker(3); ok || len(im.Brokers()) != 2 {
					t.Fatalf("broker 3 still present: %v", im.Brokers())
				}
			},
		},
		{
			name: "create second topic, topics sorted",
			recs: []Record{CreateTopic{Name: "alpha", ID: idOf(2), Partitions: []Partition{partition(0, 3, 3)}}},
			check: func(t *testing.T, im *Image) {
				var names []string
				for _, tp := range im.Topics() {
					names = append(names, tp.Name)
				}
				if !slices.Equal(names, []string{"alpha", "orders"}) {
					t.Fatalf("topics = %v", names)
				}
				if tp, ok := im.TopicByID(idOf(2)); !ok || tp.Name != "alpha" {
					t.Fatalf("TopicByID = %v, %v", tp, ok)
				}
			},
		},
		{
			name: "remove topic",
			recs: []Record{RemoveTopic{ID: idOf(1)}},
			check: func(t *testing.T, im *Image) {
				if _, ok := im.Topic("orders"); ok {
					t.Fatal("orders still present by name")
				}
				if _, ok := im.TopicByID(idOf(1)); ok {
					t.Fatal("orders still present by id")
				}
				if im.TopicCount() != 0 || len(im.Topics()) != 0 {
					t.Fatal("topic list not empty")
				}
			},
		},
		{
			name: "remove then re-create same name with new id",
			recs: []Record{RemoveTopic{ID: idOf(1)}, CreateTopic{Name: "orders", ID: idOf(9), Partitions: []Partition{partition(0, 1, 1)}}},
			check: func(t *testing.T, im *Image) {
				tp, _ := im.Topic("orders")
				if tp.ID != idOf(9) || len(tp.Partitions) != 1 {
					t.Fatalf("orders = %+v", tp)
				}
			},
		},
		{
			name: "add partitions",
			recs: []Record{AddPartitions{TopicID: idOf(1), Partitions: []Partition{partition(2, 3, 3, 1, 2)}}},
			check: func(t *testing.T, im *Image) {
				tp, _ := im.Topic("orders")
				if len(tp.Partitions) != 3 || tp.Partitions[2].Leader != 3 {
					t.Fatalf("orders = %+v", tp.Partitions)
				}
			},
		},
		{
			name: "leader change bumps both epochs",
			recs: []Record{PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](2)}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 0)
				if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			// Kafka's rule: the leader starts its followers' state afresh
			// (sim seed 580 in TestRegressions lost records without it).
			name: "a replica leaving the set bumps the leader epoch",
			recs: []Record{PartitionChange{TopicID: idOf(1), Partition: 0, Replicas: ptr([]int32{1, 2}), ISR: ptr([]int32{1, 2})}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 0)
				if p.Leader != 1 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			name: "a replica joining the set bumps only the partition epoch",
			recs: []Record{broker(4, 40), PartitionChange{TopicID: idOf(1), Partition: 0, Replicas: ptr([]int32{1, 2, 3, 4}), AddingReplicas: ptr([]int32{4})}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 0)
				if p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			name: "isr shrink bumps only partition epoch",
			recs: []Record{PartitionChange{TopicID: idOf(1), Partition: 0, ISR: ptr([]int32{1, 2})}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 0)
				if !slices.Equal(p.ISR, []int32{1, 2}) || p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			name: "same leader is not a leader change",
			recs: []Record{PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](1)}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 0)
				if p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			name: "empty isr with elr and no leader",
			recs: []Record{PartitionChange{TopicID: idOf(1), Partition: 1, Leader: ptr(NoLeader), ISR: ptr([]int32{}), ELR: ptr([]int32{2})}},
			check: func(t *testing.T, im *Image) {
				p := mustPartition(t, im, "orders", 1)
				if p.Leader != NoLeader || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{2}) || p.LeaderEpoch != 1 {
					t.Fatalf("p = %+v", p)
				}
			},
		},
		{
			name: "several changes to one topic in one batch",
			recs: []Record{
				PartitionChange{TopicID: idOf(1), Partition: 0, ISR: ptr([]int32{1})},
				PartitionChange{TopicID: idOf(1), Partition: 1, Leader: ptr[int32](3)},
				PartitionChange{TopicID: idOf(1), Partition: 0, ISR: ptr([]int32{1, 3})},
			},
			check: func(t *testing.T, im *Image) {
				p0, p1 := mustPartition(t, im, "orders", 0), mustPartition(t, im, "orders", 1)
				if !slices.Equal(p0.ISR, []int32{1, 3}) || p0.PartitionEpoch != 2 || p1.Leader != 3 || p1.LeaderEpoch != 1 {
					t.Fatalf("p0 = %+v, p1 = %+v", p0, p1)
				}
			},
		},
		{
			name: "set and delete topic config",
			recs: []Record{
				SetTopicConfig{TopicID: idOf(1), Key: "cleanup.policy", Value: ptr("compact")},
				SetTopicConfig{TopicID: idOf(1), Key: "retention.ms", Value: nil},
				SetTopicConfig{TopicID: idOf(1), Key: "absent", Value: nil},
			},
			check: func(t *testing.T, im *Image) {
				tp, _ := im.Topic("orders")
				if !reflect.DeepEqual(tp.Configs, map[string]string{"cleanup.policy": "compact"}) {
					t.Fatalf("configs = %v", tp.Configs)
				}
			},
		},
		{
			name: "allocate producer ids",
			recs: []Record{AllocateProducerIDs{NextID: 1000}, AllocateProducerIDs{NextID: 2000}},
			check: func(t *testing.T, im *Image) {
				if im.NextProducerID() != 2000 {
					t.Fatalf("NextProducerID = %d", im.NextProducerID())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := baseImage(t)
			im := mustApply(t, base, tc.recs...)
			if im.Version() != base.Version()+int64(len(tc.recs)) {
				t.Fatalf("Version = %d, want %d", im.Version(), base.Version()+int64(len(tc.recs)))
			}
			tc.check(t, im)
		})
	}
}

func mustPartition(t *testing.T, im *Image, topic string, index int32) Partition {
	t.Helper()
	tp, ok := im.Topic(topic)
	if !ok {
		t.Fatalf("no topic %q", topic)
	}
	p, ok := tp.Partition(index)
	if !ok {
		t.Fatalf("no partition %s/%d", topic, index)
	}
	return p
}

func TestApplyRejects(t *testing.T) {
	unknown := idOf(99)
	tests := []struct {
		name string
		rec  Record
	}{
		{"nil record", nil},
		{"pointer record", &FenceBroker{ID: 1, Epoch: 10}},
		{"register stale epoch", RegisterBroker{Broker: Broker{ID: 1, Epoch: 10}}},
		{"register negative id", RegisterBroker{Broker: Broker{ID: -1}}},
		{"register bad port", RegisterBroker{Broker: Broker{ID: 7, Endpoints: []Endpoint{{Port: 70000}}}}},
		{"register zero log dir id", RegisterBroker{Broker: Broker{ID: 7, LogDirs: []DirectoryID{{}}}}},
		{"register log dir id twice", RegisterBroker{Broker: Broker{ID: 7, LogDirs: []DirectoryID{idOf(3), idOf(3)}}}},
		{"fence unknown broker", FenceBroker{ID: 9, Epoch: 1}},
		{"fence wrong epoch", FenceBroker{ID: 1, Epoch: 9}},
		{"unfence wrong epoch", UnfenceBroker{ID: 1, Epoch: 11}},
		{"shutdown unknown broker", BeginControlledShutdown{ID: 9}},
		{"unregister unknown", UnregisterBroker{ID: 9}},
		{"create duplicate name", CreateTopic{Name: "orders", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1)}}},
		{"create duplicate id", CreateTopic{Name: "other", ID: idOf(1), Partitions: []Partition{partition(0, 1, 1)}}},
		{"create zero id", CreateTopic{Name: "other", Partitions: []Partition{partition(0, 1, 1)}}},
		{"create empty name", CreateTopic{ID: idOf(2), Partitions: []Partition{partition(0, 1, 1)}}},
		{"create no partitions", CreateTopic{Name: "other", ID: idOf(2)}},
		{"create gap in indexes", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1), partition(2, 1, 1)}}},
		{"create leader not in replicas", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{partition(0, 5, 1, 2)}}},
		{"create leader not in isr", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 1}}}},
		{"create duplicate replica", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1, 1)}}},
		{"create no replicas", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{{Leader: NoLeader}}}},
		{"create isr outside replicas", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1, 2}, Leader: 1}}}},
		{"create isr and elr overlap", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ELR: []int32{2}, Leader: 1}}}},
		{"create negative epoch", CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: -1}}}},
		{"create empty config key", CreateTopic{Name: "other", ID: idOf(2), Configs: map[string]string{"": "x"}, Partitions: []Partition{partition(0, 1, 1)}}},
		{"remove unknown", RemoveTopic{ID: unknown}},
		{"add partitions unknown topic", AddPartitions{TopicID: unknown, Partitions: []Partition{partition(0, 1, 1)}}},
		{"add partitions wrong index", AddPartitions{TopicID: idOf(1), Partitions: []Partition{partition(3, 1, 1)}}},
		{"add no partitions", AddPartitions{TopicID: idOf(1)}},
		{"change unknown topic", PartitionChange{TopicID: unknown, Partition: 0}},
		{"change unknown partition", PartitionChange{TopicID: idOf(1), Partition: 2}},
		{"change negative partition", PartitionChange{TopicID: idOf(1), Partition: -1}},
		{"change leader outside replicas", PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](7)}},
		{"change isr drops leader", PartitionChange{TopicID: idOf(1), Partition: 0, ISR: ptr([]int32{2, 3})}},
		{"change replicas drop isr member", PartitionChange{TopicID: idOf(1), Partition: 0, Replicas: ptr([]int32{1, 2})}},
		{"config unknown topic", SetTopicConfig{TopicID: unknown, Key: "k", Value: ptr("v")}},
		{"config empty key", SetTopicConfig{TopicID: idOf(1), Key: "", Value: ptr("v")}},
		{"producer ids go backwards", AllocateProducerIDs{NextID: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := baseImage(t)
			before := snapshot(base)
			got, err := base.Apply(tc.rec)
			if err == nil {
				t.Fatalf("Apply succeeded: %+v", got)
			}
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("error %v does not wrap ErrInvalidRecord", err)
			}
			if got != nil {
				t.Fatal("Apply returned an image with its error")
			}
			if after := snapshot(base); !reflect.DeepEqual(before, after) {
				t.Fatalf("base image changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestApplyIsAllOrNothing(t *testing.T) {
	base := baseImage(t)
	before := snapshot(base)
	_, err := base.Apply(
		SetTopicConfig{TopicID: idOf(1), Key: "a", Value: ptr("b")},
		PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](2)},
		RemoveTopic{ID: idOf(42)},
	)
	if err == nil {
		t.Fatal("batch with an invalid record succeeded")
	}
	if after := snapshot(base); !reflect.DeepEqual(before, after) {
		t.Fatal("failed batch changed the base image")
	}
}

// imageSnapshot is a deep, comparable copy of everything an Image exposes.
type imageSnapshot struct {
	ClusterID      string
	Version        int64
	NextProducerID int64
	Topics         []Topic
	Brokers        []Broker
}

func snapshot(im *Image) imageSnapshot {
	s := imageSnapshot{ClusterID: im.ClusterID(), Version: im.Version(), NextProducerID: im.NextProducerID()}
	for _, tp := range im.Topics() {
		s.Topics = append(s.Topics, *tp.Clone())
	}
	for _, b := range im.Brokers() {
		s.Brokers = append(s.Brokers, *b.Clone())
	}
	return s
}

// TestApplyLeavesOldImageUnchanged applies every kind of record and checks
// that the old image, and values previously read from it, do not move.
func TestApplyLeavesOldImageUnchanged(t *testing.T) {
	old := baseImage(t)
	before := snapshot(old)
	oldTopic, _ := old.Topic("orders")
	oldBroker, _ := old.Broker(1)
	oldTopicCopy, oldBrokerCopy := *oldTopic.Clone(), *oldBroker.Clone()

	isr := []int32{1, 2}
	recs := []Record{
		RegisterBroker{Broker: Broker{ID: 1, Epoch: 99, Rack: "moved"}},
		FenceBroker{ID: 2, Epoch: 20},
		BeginControlledShutdown{ID: 3, Epoch: 30},
		UnregisterBroker{ID: 3},
		PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](2), ISR: &isr},
		SetTopicConfig{TopicID: idOf(1), Key: "retention.ms", Value: ptr("5")},
		AddPartitions{TopicID: idOf(1), Partitions: []Partition{partition(2, 1, 1)}},
		CreateTopic{Name: "new", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1)}},
		AllocateProducerIDs{NextID: 10},
	}
	next := mustApply(t, old, recs...)
	isr[0] = 3 // mutating the record after Apply must not reach the image

	if after := snapshot(old); !reflect.DeepEqual(before, after) {
		t.Fatalf("old image changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if !reflect.DeepEqual(*oldTopic, oldTopicCopy) || !reflect.DeepEqual(*oldBroker, oldBrokerCopy) {
		t.Fatal("values read from the old image changed")
	}
	if p := mustPartition(t, next, "orders", 0); !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("new image aliases the record's ISR slice: %v", p.ISR)
	}
	removed := mustApply(t, old, RemoveTopic{ID: idOf(1)})
	if _, ok := old.Topic("orders"); !ok {
		t.Fatal("remove on new image removed from old image")
	}
	if _, ok := removed.Topic("orders"); ok {
		t.Fatal("remove did not take effect")
	}
}

func TestApplySharesUnchangedTopics(t *testing.T) {
	old := mustApply(t, baseImage(t), CreateTopic{Name: "other", ID: idOf(2), Partitions: []Partition{partition(0, 1, 1)}})
	next := mustApply(t, old, PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr[int32](2)})
	oldOther, _ := old.Topic("other")
	nextOther, _ := next.Topic("other")
	if oldOther != nextOther {
		t.Fatal("unchanged topic was copied instead of shared")
	}
	oldOrders, _ := old.Topic("orders")
	nextOrders, _ := next.Topic("orders")
	if oldOrders == nextOrders {
		t.Fatal("changed topic was shared")
	}
	byID, _ := next.TopicByID(idOf(1))
	if byID != nextOrders {
		t.Fatal("name and id indexes disagree")
	}
}

func TestEmptyApplyAndWithVersion(t *testing.T) {
	im := Empty("c")
	same, err := im.Apply()
	if err != nil || same != im {
		t.Fatalf("empty Apply = %v, %v", same, err)
	}
	v := im.WithVersion(42)
	if v.Version() != 42 || im.Version() != 0 || v.ClusterID() != "c" {
		t.Fatalf("WithVersion: %d/%d", v.Version(), im.Version())
	}
}

// TestLeaderlessPartitionsCounted: every Apply that adds, changes or
// removes partitions keeps the image's count of leaderless ones, which
// the controller's maintenance trusts to skip its walk.
func TestLeaderlessPartitionsCounted(t *testing.T) {
	im := baseImage(t)
	if n := im.LeaderlessPartitions(); n != 0 {
		t.Fatalf("base image counts %d leaderless", n)
	}
	steps := []struct {
		name string
		recs []Record
		want int
	}{
		{"create with one leaderless", []Record{CreateTopic{Name: "alpha", ID: idOf(2), Partitions: []Partition{
			partition(0, NoLeader, 1, 2), partition(1, 2, 2, 1)}}}, 1},
		{"add a leaderless partition", []Record{AddPartitions{TopicID: idOf(2), Partitions: []Partition{partition(2, NoLeader, 3, 1)}}}, 2},
		{"lose a leader", []Record{PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr(NoLeader)}}, 3},
		{"leaderless stays leaderless", []Record{PartitionChange{TopicID: idOf(1), Partition: 0, ISR: ptr([]int32{1, 2})}}, 3},
		{"elect one", []Record{PartitionChange{TopicID: idOf(2), Partition: 0, Leader: ptr(int32(1))}}, 2},
		{"one batch: elect, lose, elect", []Record{
			PartitionChange{TopicID: idOf(1), Partition: 0, Leader: ptr(int32(2))},
			PartitionChange{TopicID: idOf(1), Partition: 1, Leader: ptr(NoLeader)},
			PartitionChange{TopicID: idOf(1), Partition: 1, Leader: ptr(int32(3))},
		}, 1},
		{"remove the topic holding it", []Record{RemoveTopic{ID: idOf(2)}}, 0},
	}
	for _, s := range steps {
		im = mustApply(t, im, s.recs...)
		if n := im.LeaderlessPartitions(); n != s.want {
			t.Fatalf("%s: %d leaderless, want %d", s.name, n, s.want)
		}
		found := 0
		for _, tp := range im.Topics() {
			for _, p := range tp.Partitions {
				if p.Leader == NoLeader {
					found++
				}
			}
		}
		if found != s.want {
			t.Fatalf("%s: the image holds %d leaderless, the test expects %d", s.name, found, s.want)
		}
	}
}
