package api

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

// TestFencedBrokerListedBriefly: a Metadata answer whose partitions have
// a replica on a broker the node saw fenced keeps it in its broker list
// for FencedListedMs after that; an answer without such partitions does
// not, nor one about a broker fenced before the node looked; the time is
// forgotten once the broker is back.
func TestFencedBrokerListedBriefly(t *testing.T) {
	im := coordinatorImage(t)
	fenced := mustApply(t, im, metadata.FenceBroker{ID: 2, Epoch: 10})
	offsets, _ := fenced.Topic(OffsetsTopic)
	onBroker2 := []kmsg.MetadataResponseTopic{topicMetadata(fenced, offsets, "EXTERNAL", func(int32) bool { return false })}
	listedFor := func(f *FenceTimes, im *metadata.Image, topics []kmsg.MetadataResponseTopic, nowMs int64) []int32 {
		var ids []int32
		for _, b := range liveBrokers(im, "EXTERNAL", recentlyFencedIn(topics, f.FencedAtMs, nowMs)) {
			ids = append(ids, b.id)
		}
		return ids
	}
	listed := func(f *FenceTimes, im *metadata.Image, nowMs int64) []int32 {
		return listedFor(f, im, onBroker2, nowMs)
	}
	const t0 = 1_000_000

	var f FenceTimes
	f.Observe(nil, im, t0-10)
	f.Observe(im, fenced, t0)
	if at, ok := f.FencedAtMs(2); !ok || at != t0 {
		t.Fatalf("FencedAtMs(2) = %d, %v; want %d, true", at, ok, t0)
	}
	for _, tc := range []struct {
		nowMs int64
		want  []int32
	}{
		{t0, []int32{1, 2, 3}},
		{t0 + FencedListedMs - 1, []int32{1, 2, 3}},
		{t0 + FencedListedMs, []int32{1, 3}},
	} {
		if got := listed(&f, fenced, tc.nowMs); !slices.Equal(got, tc.want) {
			t.Errorf("%d ms after the fencing: brokers %v, want %v", tc.nowMs-t0, got, tc.want)
		}
	}
	// An answer without partitions (brokers only) or none on broker 2
	// leaves it out.
	elsewhere := onBroker2[0]
	elsewhere.Partitions = slices.Clone(elsewhere.Partitions)
	for i := range elsewhere.Partitions {
		elsewhere.Partitions[i].Replicas = []int32{1, 3}
	}
	for name, topics := range map[string][]kmsg.MetadataResponseTopic{"no topics": nil, "replicas elsewhere": {elsewhere}} {
		if got := listedFor(&f, fenced, topics, t0); !slices.Equal(got, []int32{1, 3}) {
			t.Errorf("%s: brokers %v, want [1 3]", name, got)
		}
	}

	// Another image with broker 2 still fenced keeps the first time.
	f.Observe(fenced, fenced, t0+100)
	if at, _ := f.FencedAtMs(2); at != t0 {
		t.Errorf("FencedAtMs(2) = %d after a later image, want %d", at, t0)
	}

	// Unfenced, it is listed as any broker and its time is gone; fenced
	// again, the new fencing counts.
	back := mustApply(t, fenced, metadata.UnfenceBroker{ID: 2, Epoch: 10})
	f.Observe(fenced, back, t0+200)
	if _, ok := f.FencedAtMs(2); ok {
		t.Error("FencedAtMs(2) still known after the broker was unfenced")
	}
	again := mustApply(t, back, metadata.FenceBroker{ID: 2, Epoch: 10})
	f.Observe(back, again, t0+300)
	if got := listed(&f, again, t0+300+FencedListedMs-1); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("after a second fencing: brokers %v, want [1 2 3]", got)
	}

	// A node that first sees the broker already fenced (it started, or
	// loaded a snapshot, after the fencing) does not list it.
	var late FenceTimes
	late.Observe(nil, fenced, t0)
	late.Observe(fenced, fenced, t0+1)
	if got := listed(&late, fenced, t0+1); !slices.Equal(got, []int32{1, 3}) {
		t.Errorf("fenced before the node looked: brokers %v, want [1 3]", got)
	}
}
