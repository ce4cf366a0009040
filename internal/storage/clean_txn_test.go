package storage

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// txnKeyed is keyedBatch with the transactional attribute.
func txnKeyed(ts int64, pid int64, seq int32, recs ...kv) []byte {
	b := keyedBatch(ts, pid, 0, seq, recs...)
	attrs := binary.BigEndian.Uint16(b[21:]) | batch.TransactionalBit
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}

// An aborted transaction's records are removed by compaction and never
// supersede the committed value of their key; a committed transaction's
// do; markers stay, and the aborted-transaction index follows the
// segments the cleaner merges.
func TestCleanRemovesAbortedTransactions(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", compactConfig())
	mustAppend(t, l, keyedBatch(1, -1, 0, 0, kv{key: "a", value: "a0"}, kv{key: "b", value: "b0"}), 0, 1)
	// Producer 9 aborts a write of a and b.
	first := mustAppend(t, l, txnKeyed(2, 9, 0, kv{key: "a", value: "aborted"}), 0, 2).BaseOffset
	mustAppend(t, l, txnKeyed(2, 9, 1, kv{key: "b", value: "aborted"}), 0, 2)
	abort := mustAppend(t, l, batch.BuildMarker(9, 0, batch.Marker{Commit: false}, 3), 0, 3)
	if err := l.AddAbortedTxn(AbortedTxn{ProducerID: 9, FirstOffset: first, LastOffset: abort.LastOffset, LastStableOffset: abort.LastOffset + 1}); err != nil {
		t.Fatal(err)
	}
	// Producer 10 commits a new b.
	mustAppend(t, l, txnKeyed(4, 10, 0, kv{key: "b", value: "b1"}), 0, 4)
	mustAppend(t, l, batch.BuildMarker(10, 0, batch.Marker{Commit: true}, 5), 0, 5)
	// Fill segments so that all of the above is cleanable.
	writeUpdates(t, l, 40, 5, 100)
	mustSync(t, l)
	index := l.AllAbortedTxns()

	mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true})
	mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true})
	var values []string
	for _, r := range readRecords(t, l) {
		if r.key == "a" || r.key == "b" {
			values = append(values, r.key+"="+r.value)
		}
	}
	if want := []string{"a=a0", "b=b1"}; !slices.Equal(values, want) {
		t.Fatalf("after compaction %q, want %q", values, want)
	}
	markers := 0
	for _, b := range readAll(t, l) {
		if h, _ := batch.ParseHeader(b); h.IsControl() {
			markers++
		}
	}
	if markers != 2 {
		t.Fatalf("%d markers left, want both: the aborted transaction's records were there at the first pass", markers)
	}
	if got := l.AllAbortedTxns(); !slices.Equal(got, index) {
		t.Fatalf("index after compaction %v, want %v", got, index)
	}

	// The aborted transaction's records are gone: its marker got a delete
	// horizon (delete.retention.ms) in the second pass, and a pass after
	// it removes the marker (kept empty: it is producer 9's last batch)
	// and its index entry. The committed transaction keeps its marker
	// while b1 lives.
	horizon := int64(1000) + compactConfig().DeleteRetentionMs
	res := mustClean(t, l, CleanParams{NowMs: horizon - 1, UpTo: l.LogEndOffset(), Force: true})
	if res.MarkersRemoved != 0 || len(l.AllAbortedTxns()) != 1 {
		t.Fatalf("before the horizon: %+v, index %v", res, l.AllAbortedTxns())
	}
	res = mustClean(t, l, CleanParams{NowMs: horizon, UpTo: l.LogEndOffset(), Force: true})
	if res.MarkersRemoved != 1 || len(l.AllAbortedTxns()) != 0 {
		t.Fatalf("after the horizon: %+v, index %v", res, l.AllAbortedTxns())
	}
	var kept []batch.Header
	for _, b := range readAll(t, l) {
		if h, _ := batch.ParseHeader(b); h.IsControl() {
			kept = append(kept, h)
		}
	}
	if len(kept) != 2 || kept[0].ProducerID != 9 || kept[0].RecordCount != 0 || kept[1].ProducerID != 10 || kept[1].RecordCount != 1 {
		t.Fatalf("markers left %+v: want producer 9's emptied, producer 10's whole", kept)
	}
	l.Close()
	l = openLog(t, fs, "/p", compactConfig())
	defer l.Close()
	if got := l.AllAbortedTxns(); len(got) != 0 {
		t.Fatalf("index after reopen %v, want empty", got)
	}
}
