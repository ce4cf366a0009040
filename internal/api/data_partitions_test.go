package api

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

func TestEachDataPartition(t *testing.T) {
	id := [16]byte{7}
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(13)
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "", id
	for _, p := range []int32{2, 0} {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = p
		pt.Partitions = append(pt.Partitions, pp)
	}
	produce.Topics = append(produce.Topics, pt)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	for _, name := range []string{"a", "b"} {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
	}
	forgotten := kmsg.NewFetchRequestForgottenTopic()
	forgotten.Topic, forgotten.Partitions = "gone", []int32{0}
	fetch.ForgottenTopics = append(fetch.ForgottenTopics, forgotten)

	list := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "c"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition = 3
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)

	for _, tc := range []struct {
		name string
		body kmsg.Request
		want []PartitionName
	}{
		{"produce v13 by id", produce, []PartitionName{{TopicID: id, ByID: true, Partition: 2}, {TopicID: id, ByID: true, Partition: 0}}},
		{"fetch v12 by name, forgotten topics left out", fetch, []PartitionName{{Topic: "a", Partition: 1}, {Topic: "b", Partition: 1}}},
		{"list offsets", list, []PartitionName{{Topic: "c", Partition: 3}}},
		{"metadata names none", kmsg.NewPtrMetadataRequest(), nil},
	} {
		var got []PartitionName
		EachDataPartition(tc.body, func(n PartitionName) bool { got = append(got, n); return true })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	var first []PartitionName
	EachDataPartition(fetch, func(n PartitionName) bool { first = append(first, n); return false })
	if len(first) != 1 {
		t.Errorf("stopping after the first partition visited %d", len(first))
	}
}

// TestMetadataWaitFor: a request naming a topic the image lacks catches up
// first; one naming a partition the image says this broker leads waits
// for the runtime to lead it, but only while the runtime is behind the
// image; partitions others lead never wait.
func TestMetadataWaitFor(t *testing.T) {
	im := coordinatorImage(t) // __consumer_offsets: partitions 0-3 led by 1, 2, 3, none
	produce := func(byID bool, topic string, partitions ...int32) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		if byID {
			req.SetVersion(13)
		} else {
			req.SetVersion(9)
		}
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		if byID {
			rt.Topic, rt.TopicID = "", [16]byte{1, 2, 3}
		}
		for _, p := range partitions {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	notLeading := func(metadata.TopicID, int32) bool { return false }
	leading := func(metadata.TopicID, int32) bool { return true }
	for _, tc := range []struct {
		name    string
		body    kmsg.Request
		behind  bool
		leading func(metadata.TopicID, int32) bool
		want    MetadataWait
	}{
		{"unknown topic", produce(false, "new-topic", 0), false, leading, MetadataWait{CatchUp: true}},
		{"led here, runtime behind, not leading yet", produce(false, OffsetsTopic, 0), true, notLeading, MetadataWait{Reconcile: true}},
		{"by topic id", produce(true, "", 0), true, notLeading, MetadataWait{Reconcile: true}},
		{"led here, runtime caught up", produce(false, OffsetsTopic, 0), false, notLeading, MetadataWait{}},
		{"led here and leading", produce(false, OffsetsTopic, 0), true, leading, MetadataWait{}},
		{"led by another broker", produce(false, OffsetsTopic, 1, 3), true, notLeading, MetadataWait{}},
		{"not a data request", kmsg.NewPtrMetadataRequest(), true, notLeading, MetadataWait{}},
	} {
		if got := MetadataWaitFor(im, 1, tc.behind, tc.leading, tc.body); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
