package api

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/records"
)

func testBatch(lastOffsetDelta, count int32, attributes int16, recs []byte) []byte {
	h := batch.Header{LastOffsetDelta: lastOffsetDelta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	return batch.Filtered(h, attributes, 1000, 1000, count, recs)
}

// TestProduceValidationCodes checks the error each malformed or refused
// batch gets, by produce version, and the KIP-467 record errors.
func TestProduceValidationCodes(t *testing.T) {
	keyed := records.Append(nil, records.Record{Key: []byte("k"), Value: []byte("v")}, 0)
	keyless := records.Append(nil, records.Record{OffsetDelta: 1, Value: []byte("v")}, 0)
	// A record whose timestamp delta's varint overflows 64 bits, and one
	// whose fields take three or more bytes each and that is well formed.
	overflow := []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 2, 'k', 2, 'v', 0}
	overflow = append([]byte{byte(2 * len(overflow))}, overflow...)
	long := records.Append(nil, records.Record{Key: []byte("k"), Value: make([]byte, 10_000)}, 100_000)
	late := records.Append(nil, records.Record{OffsetDelta: 1, Key: []byte("k"), Value: []byte("v")}, 10_000_000)
	skips := append(append([]byte(nil), keyed...), records.Append(nil, records.Record{OffsetDelta: 2, Key: []byte("k")}, 0)...)
	badCRC := testBatch(0, 1, 0, keyed)
	badCRC[len(badCRC)-1] ^= 1
	compact := config.TopicConfig{CleanupPolicy: []string{"compact"}, MessageTimestampType: "CreateTime",
		MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: 3_600_000}
	cases := []struct {
		name       string
		b          []byte
		v7, v9     *kerr.Error
		recordErrs []int32 // at v9
	}{
		{"count lies", testBatch(math.MaxInt32-1, math.MaxInt32, 0, keyed), kerr.CorruptMessage, kerr.InvalidRecord, nil},
		{"CRC", badCRC, kerr.CorruptMessage, kerr.CorruptMessage, nil},
		{"garbage gzip", testBatch(0, 1, batch.CompressionGzip, []byte("not gzip")), kerr.CorruptMessage, kerr.CorruptMessage, nil},
		{"keyless record", testBatch(1, 2, 0, append(append([]byte(nil), keyed...), keyless...)), kerr.CorruptMessage, kerr.InvalidRecord, []int32{1}},
		{"control batch", testBatch(0, 1, batch.ControlBit, keyed), kerr.InvalidRecord, kerr.InvalidRecord, nil},
		{"varint overflows 64 bits", testBatch(0, 1, 0, overflow), kerr.CorruptMessage, kerr.InvalidRecord, nil},
		{"record cut short", testBatch(0, 1, 0, keyed[:len(keyed)-1]), kerr.CorruptMessage, kerr.InvalidRecord, nil},
		{"offset delta skips", testBatch(1, 2, 0, skips), kerr.CorruptMessage, kerr.InvalidRecord, nil},
		{"timestamp out of range", testBatch(1, 2, 0, append(append([]byte(nil), keyed...), late...)), kerr.InvalidTimestamp, kerr.InvalidTimestamp, []int32{1}},
		{"long fields, well formed", testBatch(0, 1, 0, long), nil, nil, nil},
	}
	for _, c := range cases {
		for _, v := range []int16{7, 9} {
			want := c.v7
			if v >= 8 {
				want = c.v9
			}
			_, err := validateProduceRecords(append([]byte(nil), c.b...), 1<<20, produceRules(compact, 1000), v, false)
			if want == nil {
				if err != nil {
					t.Errorf("%s v%d: %v, want it accepted", c.name, v, err)
				}
				continue
			}
			sp := kmsg.NewProduceResponseTopicPartition()
			fillPartitionError(&sp, err, v)
			if sp.ErrorCode != want.Code || sp.ErrorMessage == nil {
				t.Errorf("%s v%d: code %d (%v), want %s", c.name, v, sp.ErrorCode, err, want.Message)
			}
			var got []int32
			for _, r := range sp.ErrorRecords {
				got = append(got, r.RelativeOffset)
			}
			if v < 8 && len(got) != 0 || v >= 8 && len(got) != len(c.recordErrs) {
				t.Errorf("%s v%d: record errors %v, want %v", c.name, v, got, c.recordErrs)
			}
		}
	}
}

// TestProduceFixesMaxTimestamp: a header whose max timestamp disagrees
// with its records is stored with theirs, as Kafka does, and stays valid.
func TestProduceFixesMaxTimestamp(t *testing.T) {
	recs := records.Append(nil, records.Record{Key: []byte("k")}, 0)
	recs = records.Append(recs, records.Record{OffsetDelta: 1, Key: []byte("k")}, 500)
	b := testBatch(1, 2, 0, recs) // max timestamp 1000, records at 1000 and 1500
	rules := produceRules(config.TopicConfig{MessageTimestampType: "CreateTime", MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: math.MaxInt64}, 0)
	batches, err := validateProduceRecords(b, 1<<20, rules, 9, false)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.Validate(batches[0])
	if err != nil || h.MaxTimestamp != 1500 {
		t.Fatalf("max timestamp %d (%v), want 1500", h.MaxTimestamp, err)
	}
}
