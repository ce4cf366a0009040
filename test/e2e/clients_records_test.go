package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The client matrix tests produce a known set of records with one client and
// read them back with another. This file holds the client-neutral model: what
// was sent, what came back, and the comparison.

// testHeader is one record header.
type testHeader struct {
	Key   string
	Value []byte
}

// testRecord is a record as produced, or as read back (then Offset is set).
type testRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []testHeader
}

// recordSet is what one producer sends to one topic: records are spread over
// the partitions round-robin, so each partition's expected order is known.
type recordSet struct {
	topic       string
	partitions  int32
	byPartition [][]testRecord
}

// codecs are the record batch compression codecs every client must handle,
// by the names kcat and librdkafka use.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecAttribute is the codec's value in the low bits of a batch's
// attributes, as franz-go reports it in FetchBatchMetrics.
var codecAttribute = map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// headerPartition names the header that carries a record's partition. The
// kafka-go balancer routes by it because kafka-go ignores Message.Partition
// on writes.
const headerPartition = "part"

// makeRecords builds n records for topic. Keys, values and headers are
// printable text without tabs or newlines so that kcat can send and print
// them; values are repetitive so that every codec really compresses.
// perRecordHeaders adds a header that differs per record; kcat can only send
// the same headers with every record of one run, so it passes false.
func makeRecords(topic string, partitions int32, n int, perRecordHeaders bool) *recordSet {
	rs := &recordSet{topic: topic, partitions: partitions, byPartition: make([][]testRecord, partitions)}
	for i := range n {
		p := int32(i) % partitions
		filler := strings.Repeat(string(rune('a'+i%26)), 40+i%50)
		r := testRecord{
			Partition: p,
			Key:       fmt.Appendf(nil, "key-%06d", i),
			Value:     fmt.Appendf(nil, "%s|%06d|%s", topic, i, filler),
			Headers: []testHeader{
				{Key: "run", Value: []byte(topic)},
				{Key: headerPartition, Value: []byte(strconv.Itoa(int(p)))},
			},
		}
		if perRecordHeaders {
			r.Headers = append(r.Headers, testHeader{Key: "seq", Value: fmt.Appendf(nil, "%06d", i)})
		}
		rs.byPartition[p] = append(rs.byPartition[p], r)
	}
	return rs
}

// counts is the number of records expected per partition.
func (rs *recordSet) counts() []int {
	out := make([]int, len(rs.byPartition))
	for p, recs := range rs.byPartition {
		out[p] = len(recs)
	}
	return out
}

// all returns every record, partition by partition.
func (rs *recordSet) all() []testRecord {
	var out []testRecord
	for _, recs := range rs.byPartition {
		out = append(out, recs...)
	}
	return out
}

// partitionFromHeaders reads the partition header back (for balancers).
func partitionFromHeaders(hs []testHeader) (int, error) {
	for _, h := range hs {
		if h.Key == headerPartition {
			return strconv.Atoi(string(h.Value))
		}
	}
	return 0, fmt.Errorf("no %q header", headerPartition)
}

// verifyRecords checks that got holds exactly the expected records of each
// partition, in order, once each, at offsets 0, 1, 2, ... (fresh topics).
func verifyRecords(t *testing.T, want *recordSet, got [][]testRecord) {
	t.Helper()
	if len(got) != len(want.byPartition) {
		t.Fatalf("read %d partitions, want %d", len(got), len(want.byPartition))
	}
	for p, wantRecs := range want.byPartition {
		gotRecs := got[p]
		if len(gotRecs) != len(wantRecs) {
			t.Errorf("partition %d: read %d records, want %d", p, len(gotRecs), len(wantRecs))
		}
		for i := 0; i < len(gotRecs) && i < len(wantRecs); i++ {
			if diff := diffRecord(wantRecs[i], gotRecs[i], int64(i)); diff != "" {
				t.Fatalf("partition %d record %d: %s", p, i, diff)
			}
		}
	}
}

// diffRecord describes how got differs from want, or returns "".
func diffRecord(want, got testRecord, wantOffset int64) string {
	switch {
	case got.Partition != want.Partition:
		return fmt.Sprintf("partition %d, want %d", got.Partition, want.Partition)
	case got.Offset != wantOffset:
		return fmt.Sprintf("offset %d, want %d (gap or duplicate)", got.Offset, wantOffset)
	case !bytes.Equal(got.Key, want.Key):
		return fmt.Sprintf("key %q, want %q", got.Key, want.Key)
	case !bytes.Equal(got.Value, want.Value):
		return fmt.Sprintf("value %q, want %q", got.Value, want.Value)
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers)
	}
	for i := range want.Headers {
		if got.Headers[i].Key != want.Headers[i].Key || !bytes.Equal(got.Headers[i].Value, want.Headers[i].Value) {
			return fmt.Sprintf("header %d is %s=%q, want %s=%q", i,
				got.Headers[i].Key, got.Headers[i].Value, want.Headers[i].Key, want.Headers[i].Value)
		}
	}
	return ""
}
