package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

func ptr[T any](v T) *T { return &v }

func topicID(b byte) metadata.TopicID { return metadata.TopicID{0: b, 15: 7} }

func apply(t testing.TB, im *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	next, err := im.Apply(recs...)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", recs, err)
	}
	return next
}

// cluster returns an image with active brokers ids, each on rack racks[i]
// when racks is given.
func cluster(t testing.TB, ids []int32, racks ...string) *metadata.Image {
	t.Helper()
	im := metadata.Empty("test")
	for i, id := range ids {
		b := metadata.Broker{ID: id, Epoch: int64(100 + id)}
		if i < len(racks) {
			b.Rack = racks[i]
		}
		im = apply(t, im, metadata.RegisterBroker{Broker: b})
	}
	return im
}

func fence(t *testing.T, im *metadata.Image, id int32) *metadata.Image {
	t.Helper()
	b, _ := im.Broker(id)
	return apply(t, im, metadata.FenceBroker{ID: id, Epoch: b.Epoch})
}

// withTopic adds a topic with the given partitions (Index filled in).
func withTopic(t testing.TB, im *metadata.Image, name string, id metadata.TopicID, parts ...metadata.Partition) *metadata.Image {
	t.Helper()
	for i := range parts {
		parts[i].Index = int32(i)
	}
	return apply(t, im, metadata.CreateTopic{Name: name, ID: id, Partitions: parts})
}

func part(leader int32, replicas, isr, elr []int32) metadata.Partition {
	return metadata.Partition{Replicas: replicas, ISR: isr, ELR: elr, Leader: leader}
}

func ids(v ...int32) []int32 { return v }

// wantCode fails unless err carries the Kafka error code want (nil for success).
func wantCode(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want code %s", err, want.Message)
	}
	if ErrorCode(err) != want.Code {
		t.Fatalf("ErrorCode = %d, want %d", ErrorCode(err), want.Code)
	}
}

func mustPartition(t *testing.T, im *metadata.Image, topic string, index int32) metadata.Partition {
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
