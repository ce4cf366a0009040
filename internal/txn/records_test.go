package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TransactionLogValue is version 0 unless one of version 1's tagged
// fields has something to say, and then carries only those set, as
// Kafka encodes them; each decodes to what was written.
func TestRecordValueVersion(t *testing.T) {
	base := Txn{ID: "a", ProducerID: 7, PrevProducerID: -1, NextProducerID: -1, Epoch: 3, LastEpoch: -1, TimeoutMs: 1000,
		State: Ongoing, Partitions: []TopicPartition{{"t", 0}, {"t", 2}}, StartMs: 5, UpdateMs: 6}
	for _, tc := range []struct {
		name    string
		change  func(*Txn)
		version int16
		tags    int
	}{
		{"version 1 client", func(*Txn) {}, 0, 0},
		{"version 2 client", func(t *Txn) { t.ClientTV = TV2 }, 1, 1},
		{"rotated producer id", func(t *Txn) { t.PrevProducerID = 0 }, 1, 1},
		{"rotation pending", func(t *Txn) { t.NextProducerID, t.ClientTV = 9, TV2 }, 1, 2},
	} {
		tx := base
		tc.change(&tx)
		r := record(&tx)
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if v.Version != tc.version {
			t.Errorf("%s: value version %d, want %d", tc.name, v.Version, tc.version)
		}
		if tc.version >= 1 {
			// The tag count is the last field of the value.
			tags := countTags(t, r.Value)
			if tags != tc.tags {
				t.Errorf("%s: %d tagged fields, want %d", tc.name, tags, tc.tags)
			}
		}
		_, got, err := decode(r)
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		if got.ProducerID != tx.ProducerID || got.PrevProducerID != tx.PrevProducerID || got.NextProducerID != tx.NextProducerID ||
			got.ClientTV != tx.ClientTV || got.Epoch != tx.Epoch || len(got.Partitions) != 2 {
			t.Errorf("%s: decoded %+v, wrote %+v", tc.name, got, tx)
		}
	}
}

// countTags reads the top-level tag count of a flexible
// TransactionLogValue by encoding the same value without its tags and
// reading the count where the two diverge.
func countTags(t *testing.T, b []byte) int {
	t.Helper()
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion, v.NextProducerEpoch = -1, -1, 0, -1
	bare := v.AppendTo(nil)
	// Without tags the value ends in a zero tag count; the rest of the
	// bytes are the same up to it.
	r := kbin.Reader{Src: b[len(bare)-1:]}
	n := r.Uvarint()
	if !r.Ok() {
		t.Fatal("no tag count")
	}
	return int(n)
}
