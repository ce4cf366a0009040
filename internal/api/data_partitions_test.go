package api

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
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
