package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// OtherTopics is the topic label of the series that absorbs traffic of
// topics beyond the cap. It contains characters a Kafka topic name cannot
// ([a-zA-Z0-9._-] only), so it never collides with a real topic.
const OtherTopics = "<other>"

// topicCounters are one topic's series, resolved once so the produce and
// fetch paths do no label hashing after a topic's first use.
type topicCounters struct {
	bytesIn, recordsIn, bytesOut, recordsOut prometheus.Counter
}

// topicTable hands out per-topic counters, at most maxTopics of them.
// Lookups of known topics are lock-free (sync.Map suits keys written once
// and read often); adding and deleting topics take mu.
type topicTable struct {
	maxTopics int
	bytesIn   *prometheus.CounterVec
	recordsIn *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec
	recsOut   *prometheus.CounterVec

	known sync.Map // topic name -> *topicCounters
	mu    sync.Mutex
	count atomic.Int64 // entries in known; written under mu
	other *topicCounters
}

func newTopicTable(maxTopics int) *topicTable {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, []string{"topic"})
	}
	t := &topicTable{
		maxTopics: maxTopics,
		bytesIn:   vec("topic_bytes_in_total", "Record bytes appended by producers, by topic."),
		recordsIn: vec("topic_records_in_total", "Records appended by producers, by topic."),
		bytesOut:  vec("topic_bytes_out_total", "Record bytes sent to consumers, by topic."),
		recsOut:   vec("topic_records_out_total", "Records sent to consumers, by topic."),
	}
	t.other = t.resolve(OtherTopics)
	return t
}

func (t *topicTable) collectors() []prometheus.Collector {
	return []prometheus.Collector{t.bytesIn, t.recordsIn, t.bytesOut, t.recsOut}
}

// resolve creates topic's series. It returns nil if the label value is
// not valid (not UTF-8): such traffic is counted under OtherTopics.
func (t *topicTable) resolve(topic string) *topicCounters {
	var c topicCounters
	var err error
	for _, p := range []struct {
		dst *prometheus.Counter
		vec *prometheus.CounterVec
	}{{&c.bytesIn, t.bytesIn}, {&c.recordsIn, t.recordsIn}, {&c.bytesOut, t.bytesOut}, {&c.recordsOut, t.recsOut}} {
		if *p.dst, err = p.vec.GetMetricWithLabelValues(topic); err != nil {
			t.deleteSeries(topic)
			return nil
		}
	}
	return &c
}

// counters returns topic's series, creating them while under the cap.
func (t *topicTable) counters(topic string) *topicCounters {
	if c, ok := t.known.Load(topic); ok {
		return c.(*topicCounters)
	}
	if t.count.Load() >= int64(t.maxTopics) {
		return t.other
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.known.Load(topic); ok {
		return c.(*topicCounters)
	}
	if t.count.Load() >= int64(t.maxTopics) {
		return t.other
	}
	c := t.resolve(topic)
	if c == nil {
		return t.other
	}
	t.known.Store(topic, c)
	t.count.Add(1)
	return c
}

// delete drops topic's series, freeing its place under the cap.
func (t *topicTable) delete(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.known.LoadAndDelete(topic); ok {
		t.deleteSeries(topic)
		t.count.Add(-1)
	}
}

func (t *topicTable) deleteSeries(topic string) {
	for _, vec := range []*prometheus.CounterVec{t.bytesIn, t.recordsIn, t.bytesOut, t.recsOut} {
		vec.DeleteLabelValues(topic)
	}
}

// AddBytesIn counts records a producer appended to topic: bytes of the
// batches as written and the number of records in them.
func (m *Metrics) AddBytesIn(topic string, bytes, records int64) {
	if m == nil {
		return
	}
	c := m.topics.counters(topic)
	addPositive(c.bytesIn, bytes)
	addPositive(c.recordsIn, records)
}

// AddBytesOut counts records sent to a consumer from topic (follower
// fetches go to AddReplicationBytesOut instead, as in Kafka).
func (m *Metrics) AddBytesOut(topic string, bytes, records int64) {
	if m == nil {
		return
	}
	c := m.topics.counters(topic)
	addPositive(c.bytesOut, bytes)
	addPositive(c.recordsOut, records)
}

// DeleteTopic drops a deleted topic's series so a cluster that churns
// topics does not fill the cap with dead ones.
func (m *Metrics) DeleteTopic(topic string) {
	if m == nil {
		return
	}
	m.topics.delete(topic)
}

// addPositive adds n when it is positive: a counter must never go down,
// and Counter.Add panics on a negative value.
func addPositive(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}
