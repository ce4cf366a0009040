package records

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// TestAppendMatchesKmsg checks Append against kmsg's encoder (generated
// from Kafka's own definitions) and that Decode reads it back.
func TestAppendMatchesKmsg(t *testing.T) {
	recs := []Record{
		{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v")},
		{OffsetDelta: 3, Key: []byte{}, Value: nil, Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
		{OffsetDelta: 7, Key: nil, Value: bytes.Repeat([]byte("a"), 300)},
	}
	deltas := []int64{0, -5, 1 << 40}
	var ours []byte
	var theirs []kmsg.Record
	for i, r := range recs {
		ours = Append(ours, r, deltas[i])
		kr := kmsg.Record{TimestampDelta64: deltas[i], OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		theirs = append(theirs, kr)
	}
	if want := encodeRecords(theirs); !bytes.Equal(ours, want) {
		t.Fatalf("Append encodes\n%x\nkmsg encodes\n%x", ours, want)
	}
	h := batch.Header{BaseOffset: 100, LeaderEpoch: 2, LastOffsetDelta: 9, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b := batch.Filtered(h, 0, 1000, 1000, int32(len(recs)), ours)
	got, decoded, err := Decode(b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastOffset() != 109 || got.RecordCount != 3 || len(decoded) != 3 {
		t.Fatalf("header %+v, %d records", got, len(decoded))
	}
	for i, r := range decoded {
		if r.OffsetDelta != recs[i].OffsetDelta || r.TimestampDelta != deltas[i] ||
			!bytes.Equal(r.Key, recs[i].Key) || (r.Key == nil) != (recs[i].Key == nil) ||
			!bytes.Equal(r.Value, recs[i].Value) || (r.Value == nil) != (recs[i].Value == nil) || len(r.Headers) != len(recs[i].Headers) {
			t.Fatalf("record %d decoded as %+v, want %+v", i, r, recs[i])
		}
	}
}
