package wire

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCheckElements(t *testing.T) {
	meta := func(topics int) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.Topics = make([]kmsg.MetadataRequestTopic, topics)
		return r
	}
	fetch := func(topics, parts int) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		for range topics {
			ft := kmsg.NewFetchRequestTopic()
			ft.Partitions = make([]kmsg.FetchRequestTopicPartition, parts)
			r.Topics = append(r.Topics, ft)
		}
		return r
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Topics = []kmsg.ProduceRequestTopic{{Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 10<<20)}}}}
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		ok   bool
	}{
		{"small metadata", meta(3), true},
		{"metadata at the bound", meta(MaxRequestElements), true},
		{"metadata of a million topic ids", meta(1_000_000), false},
		// Nested arrays count together: 1 + 500 topics of 500 partitions.
		{"fetch of 250,000 partitions", fetch(500, 499), true},
		{"fetch of 250,500 partitions", fetch(500, 500), false},
		{"record bytes are not elements", produce, true},
		{"no arrays", kmsg.NewPtrApiVersionsRequest(), true},
	} {
		err := CheckElements(tc.req)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrTooManyElements) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// BenchmarkCheckElements is the cost the walk adds to every request: a
// one-partition produce and a 100-partition fetch.
func BenchmarkCheckElements(b *testing.B) {
	produce := kmsg.NewPtrProduceRequest()
	produce.Topics = []kmsg.ProduceRequestTopic{{Partitions: []kmsg.ProduceRequestTopicPartition{{Records: make([]byte, 1<<20)}}}}
	fetch := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.Partitions = make([]kmsg.FetchRequestTopicPartition, 100)
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	for _, bc := range []struct {
		name string
		req  kmsg.Request
	}{{"produce", produce}, {"fetch100", fetch}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := CheckElements(bc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
