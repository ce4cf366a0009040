package metrics

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTopicCounters(t *testing.T) {
	m, _ := newTestMetrics(t, Options{})
	m.AddBytesIn("orders", 1000, 10)
	m.AddBytesIn("orders", 500, 5)
	m.AddBytesOut("orders", 300, 3)
	m.AddBytesIn("audit", 7, -1) // a negative count is ignored
	tests := []struct {
		name, topic string
		vec         func() float64
		want        float64
	}{
		{"bytes in", "orders", func() float64 { return testutil.ToFloat64(m.topics.bytesIn.WithLabelValues("orders")) }, 1500},
		{"records in", "orders", func() float64 { return testutil.ToFloat64(m.topics.recordsIn.WithLabelValues("orders")) }, 15},
		{"bytes out", "orders", func() float64 { return testutil.ToFloat64(m.topics.bytesOut.WithLabelValues("orders")) }, 300},
		{"records out", "orders", func() float64 { return testutil.ToFloat64(m.topics.recsOut.WithLabelValues("orders")) }, 3},
		{"audit bytes", "audit", func() float64 { return testutil.ToFloat64(m.topics.bytesIn.WithLabelValues("audit")) }, 7},
		{"audit records", "audit", func() float64 { return testutil.ToFloat64(m.topics.recordsIn.WithLabelValues("audit")) }, 0},
	}
	for _, tt := range tests {
		if got := tt.vec(); got != tt.want {
			t.Errorf("%s(%s) = %v, want %v", tt.name, tt.topic, got, tt.want)
		}
	}
}

func TestTopicCapAggregatesOverflow(t *testing.T) {
	m, _ := newTestMetrics(t, Options{MaxTopics: 2})
	m.AddBytesIn("a", 1, 1)
	m.AddBytesIn("b", 2, 1)
	m.AddBytesIn("c", 4, 1)        // over the cap
	m.AddBytesIn("d", 8, 1)        // over the cap
	m.AddBytesIn("bad\xff", 16, 1) // not UTF-8: cannot be a label value
	m.AddBytesIn("a", 32, 1)       // still has its own series
	bytesIn := m.topics.bytesIn
	// 3 series: a, b and <other> (which exists from the start).
	if got := testutil.CollectAndCount(bytesIn); got != 3 {
		t.Errorf("bytes-in series = %d, want 3", got)
	}
	if got := testutil.ToFloat64(bytesIn.WithLabelValues(OtherTopics)); got != 28 {
		t.Errorf("bytes in <other> = %v, want 28", got)
	}
	if got := testutil.ToFloat64(bytesIn.WithLabelValues("a")); got != 33 {
		t.Errorf("bytes in a = %v, want 33", got)
	}

	// Deleting a topic frees its place for the next one.
	m.DeleteTopic("a")
	m.DeleteTopic("never-seen")
	m.AddBytesIn("e", 64, 1)
	if got := testutil.ToFloat64(bytesIn.WithLabelValues("e")); got != 64 {
		t.Errorf("bytes in e after a freed a place = %v, want 64", got)
	}
	if got := testutil.CollectAndCount(bytesIn); got != 3 {
		t.Errorf("bytes-in series after delete = %d, want 3 (b, e, <other>)", got)
	}
}

func TestTopicCapUnderConcurrency(t *testing.T) {
	const maxTopics, writers, topics = 50, 4, 200
	m, _ := newTestMetrics(t, Options{MaxTopics: maxTopics})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range topics {
				m.AddBytesIn(fmt.Sprintf("t%d", (i+w*7)%topics), 1, 1)
			}
		}()
	}
	wg.Wait()
	if got := testutil.CollectAndCount(m.topics.bytesIn); got != maxTopics+1 {
		t.Errorf("series = %d, want %d (cap plus <other>)", got, maxTopics+1)
	}
	var total float64
	for i := range topics {
		total += testutil.ToFloat64(m.topics.bytesIn.WithLabelValues(fmt.Sprintf("t%d", i)))
	}
	total += testutil.ToFloat64(m.topics.bytesIn.WithLabelValues(OtherTopics))
	if total != writers*topics {
		t.Errorf("total bytes = %v, want %d: no increment may be lost", total, writers*topics)
	}
}
