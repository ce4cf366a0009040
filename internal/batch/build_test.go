package batch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBuildProducesValidBatch(t *testing.T) {
	values := [][]byte{[]byte("a"), make([]byte, 300), nil}
	b := Build(values, 1234)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if h.RecordCount != 3 || h.LastOffsetDelta != 2 || h.MaxTimestamp != 1234 || h.ProducerID != -1 {
		t.Fatalf("unexpected header %+v", h)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot read it back: %v", err)
	}
	rest := rb.Records
	for i := range values {
		var r kmsg.Record
		if err := r.ReadFrom(rest); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if int(r.OffsetDelta) != i || len(r.Value) != len(values[i]) {
			t.Fatalf("record %d: got delta %d len %d", i, r.OffsetDelta, len(r.Value))
		}
		rest = rest[len(r.AppendTo(nil)):]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left after the records", len(rest))
	}
}

func TestSetLogAppendTimeKeepsBatchValid(t *testing.T) {
	b := Build([][]byte{[]byte("x"), []byte("y")}, 100)
	SetLogAppendTime(b, 999)
	h, err := Validate(b)
	if err != nil {
		t.Fatalf("Validate after stamping: %v", err)
	}
	if h.MaxTimestamp != 999 || h.Attributes&TimestampTypeBit == 0 || h.BaseTimestamp != 100 {
		t.Fatalf("unexpected header after stamping: %+v", h)
	}
}

func TestBuildKeyedKeepsKeysAndNullValues(t *testing.T) {
	kvs := []KeyValue{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2")}}
	b := BuildKeyed(kvs, 5)
	if _, err := Validate(b); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	rest := rb.Records
	for i, want := range kvs {
		var r kmsg.Record
		if err := r.ReadFrom(rest); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) || (r.Value == nil) != (want.Value == nil) {
			t.Fatalf("record %d: got key %q value %q (nil %v), want %q %q", i, r.Key, r.Value, r.Value == nil, want.Key, want.Value)
		}
		rest = rest[len(r.AppendTo(nil)):]
	}
}

func TestBuildProducerCarriesProducerFields(t *testing.T) {
	p := BuildProducer([][]byte{[]byte("x")}, 1, 42, 3, 17)
	h, err := Validate(p)
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != 17 {
		t.Fatalf("producer fields %d/%d/%d, want 42/3/17", h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	}
}
