package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// TestBadInputLyingBatches sends batches whose CRC is right but whose
// header or records lie about what they hold (issue 17 item 1): they must
// be refused with INVALID_RECORD before anything reaches the log, and
// everything acknowledged before reads back exactly once.
func TestBadInputLyingBatches(t *testing.T) {
	tb := startBroker(t)
	const topic = "lying"
	tb.createTopic(topic, 1, nil)
	const acked = 5
	cl := tb.client()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := range acked {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "acked-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	oneRecord := records.Append(nil, records.Record{Value: []byte("one")}, 0)
	// A record claiming 2^30 headers, with none after the count.
	var manyHeaders []byte
	{
		body := []byte{0, 0, 0, 1, 'k', 2, 'v'} // attributes, ts delta, offset delta, key, value
		body = binary.AppendVarint(body, 1<<30)
		manyHeaders = append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	lies := []struct {
		name string
		b    []byte
	}{
		{"record_count 2^31-1 holding one record", lyingBatch(math.MaxInt32-1, math.MaxInt32, oneRecord, now)},
		{"one record claiming 2^30 headers", lyingBatch(0, 1, manyHeaders, now)},
		{"gzip: record_count 2^31-1 holding one record", gzipBatch(t, math.MaxInt32-1, math.MaxInt32, oneRecord, now)},
		{"gzip: one record claiming 2^30 headers", gzipBatch(t, 0, 1, manyHeaders, now)},
		{"two records counted as three", lyingBatch(2, 3, append(append([]byte(nil), oneRecord...), records.Append(nil, records.Record{OffsetDelta: 1}, 0)...), now)},
	}
	c := dialRaw(t, tb.addr)
	corr := int32(0)
	for _, version := range []int16{8, 9, 11} {
		for _, lie := range lies {
			corr++
			res := produceResult(t, c, produceRequest(version, -1, topic, 0, lie.b), corr)
			if res.ErrorCode != kerr.InvalidRecord.Code {
				t.Errorf("v%d %s: error %d (%v), want INVALID_RECORD", version, lie.name, res.ErrorCode, kerr.ErrorForCode(res.ErrorCode))
			}
			if res.ErrorMessage == nil {
				t.Errorf("v%d %s: no error message", version, lie.name)
			}
		}
	}
	requireLogEnd(t, tb, topic, acked)
	adm := kadm.NewClient(cl)
	// ListOffsets by timestamp reads the stored batches; it must still work.
	byTime, err := adm.ListOffsetsAfterMilli(ctx, 0, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := byTime.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("offset for timestamp 0: %d (%v), want 0", o.Offset, o.Err)
	}
	consumeCount(t, tb, topic, acked)
}

// TestBadInputRecordErrors checks KIP-467's per-record answers: a batch to
// a compacted topic with one keyless record names that record in
// record_errors, and records timestamped beyond
// message.timestamp.after.max.ms are refused with INVALID_TIMESTAMP, each
// named; nothing of either batch is stored.
func TestBadInputRecordErrors(t *testing.T) {
	tb := startBroker(t)
	compact, after := "compact", "60000"
	tb.createTopic("compacted", 1, map[string]*string{"cleanup.policy": &compact})
	tb.createTopic("timed", 1, map[string]*string{"message.timestamp.after.max.ms": &after})
	now := time.Now().UnixMilli()
	c := dialRaw(t, tb.addr)

	keyless := batch.BuildKeyed([]batch.KeyValue{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("no key")}, {Key: []byte("c"), Value: []byte("3")}}, now)
	res := produceResult(t, c, produceRequest(9, -1, "compacted", 0, keyless), 1)
	if res.ErrorCode != kerr.InvalidRecord.Code || len(res.ErrorRecords) != 1 || res.ErrorRecords[0].RelativeOffset != 1 ||
		res.ErrorRecords[0].ErrorMessage == nil || res.ErrorMessage == nil {
		t.Fatalf("keyless record: error %d, record errors %+v, message %v; want INVALID_RECORD naming record 1", res.ErrorCode, res.ErrorRecords, res.ErrorMessage)
	}

	future := batch.Build([][]byte{[]byte("x"), []byte("y")}, now+2*time.Hour.Milliseconds())
	res = produceResult(t, c, produceRequest(9, -1, "timed", 0, future), 2)
	if res.ErrorCode != kerr.InvalidTimestamp.Code || len(res.ErrorRecords) != 2 || res.ErrorRecords[1].RelativeOffset != 1 {
		t.Fatalf("future timestamps: error %d, record errors %+v; want INVALID_TIMESTAMP naming records 0 and 1", res.ErrorCode, res.ErrorRecords)
	}
	// A timestamp within the bound is stored, and only that batch.
	res = produceResult(t, c, produceRequest(9, -1, "timed", 0, batch.Build([][]byte{[]byte("ok")}, now)), 3)
	if res.ErrorCode != 0 || res.BaseOffset != 0 {
		t.Fatalf("timely record: error %d, base offset %d", res.ErrorCode, res.BaseOffset)
	}
	consumeCount(t, tb, "timed", 1)
}

// lyingBatch wraps already encoded records in a batch whose header claims
// count records and the given last offset delta, with a correct CRC.
func lyingBatch(lastOffsetDelta, count int32, recs []byte, ts int64) []byte {
	h := batch.Header{LastOffsetDelta: lastOffsetDelta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	return batch.Filtered(h, 0, ts, ts, count, recs)
}

// gzipBatch is lyingBatch with its records gzip-compressed, so the lie is
// only visible once decompressed.
func gzipBatch(t testing.TB, lastOffsetDelta, count int32, recs []byte, ts int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h := batch.Header{LastOffsetDelta: lastOffsetDelta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	return batch.Filtered(h, batch.CompressionGzip, ts, ts, count, buf.Bytes())
}
