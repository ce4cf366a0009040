package storage

import (
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// abortAt appends a stand-in for an ABORT marker (any batch: storage
// does not read markers) and indexes the aborted transaction.
func abortAt(t *testing.T, l *Log, pid, first int64) AbortedTxn {
	t.Helper()
	res := mustAppend(t, l, makeBatch(1, 10, 1, 0), 0, 1)
	a := AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: res.LastOffset, LastStableOffset: res.LastOffset + 1}
	if err := l.AddAbortedTxn(a); err != nil {
		t.Fatal(err)
	}
	return a
}

// fillLog writes data batches and aborts, rolling several segments, and
// returns the aborted transactions in marker order.
func fillTxnLog(t *testing.T, l *Log, rounds int) []AbortedTxn {
	var want []AbortedTxn
	for i := range rounds {
		first := mustAppend(t, l, makeBatch(5, 100, 1, byte(i)), 0, 1).BaseOffset
		mustAppend(t, l, makeBatch(5, 100, 1, byte(i)), 0, 1)
		want = append(want, abortAt(t, l, int64(i%3), first))
	}
	return want
}

func TestAbortedTxnsQuery(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	all := fillTxnLog(t, l, 20)
	if len(l.segments) < 3 {
		t.Fatalf("only %d segments; the test wants several", len(l.segments))
	}
	if got := l.AllAbortedTxns(); !slices.Equal(got, all) {
		t.Fatalf("all = %v, want %v", got, all)
	}
	for _, c := range []struct{ from, upTo int64 }{{0, 1}, {0, 1000}, {all[3].FirstOffset, all[3].LastOffset}, {all[5].LastOffset, all[9].FirstOffset + 1}, {all[19].LastOffset + 1, 1 << 40}} {
		var want []AbortedTxn
		for _, a := range all {
			if a.LastOffset >= c.from && a.FirstOffset < c.upTo {
				want = append(want, a)
			}
		}
		if got := l.AbortedTxns(c.from, c.upTo); !slices.Equal(got, want) {
			t.Errorf("AbortedTxns(%d, %d) = %v, want %v", c.from, c.upTo, got, want)
		}
	}
}

// Entries survive a clean reopen and a crash after Sync; a crash before
// the Sync may lose or tear them (derived data), and ReplaceAbortedTxns
// (what the replica does with what its scan found) puts them back.
func TestAbortedTxnIndexAcrossCrashes(t *testing.T) {
	for seed := range uint64(20) {
		fs := vfs.NewMem()
		l := openLog(t, fs, "/p", smallConfig())
		synced := fillTxnLog(t, l, 10)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		more := fillTxnLog(t, l, 5)
		fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: seed})

		l = openLog(t, fs, "/p", smallConfig())
		got := l.AllAbortedTxns()
		if !slices.Equal(got[:min(len(got), len(synced))], synced) || len(got) < len(synced) {
			t.Fatalf("seed %d: synced entries lost: got %v, want prefix %v", seed, got, synced)
		}
		for _, a := range got {
			if a.LastOffset >= l.LogEndOffset() {
				t.Fatalf("seed %d: entry %v past the recovered log end %d", seed, a, l.LogEndOffset())
			}
		}
		// The replica's scan finds every marker the log kept.
		var truth []AbortedTxn
		for _, a := range append(synced, more...) {
			if a.LastOffset < l.LogEndOffset() {
				truth = append(truth, a)
			}
		}
		if _, err := l.ReplaceAbortedTxns(truth); err != nil {
			t.Fatal(err)
		}
		l.Close()
		l = openLog(t, fs, "/p", smallConfig())
		if got := l.AllAbortedTxns(); !slices.Equal(got, truth) {
			t.Fatalf("seed %d: after replace and reopen %v, want %v", seed, got, truth)
		}
		if n, err := l.ReplaceAbortedTxns(truth); err != nil || n != 0 {
			t.Fatalf("seed %d: second replace rewrote %d (%v), want nothing", seed, n, err)
		}
		l.Close()
	}
}

func TestAbortedTxnIndexTruncateAndRetention(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", smallConfig())
	all := fillTxnLog(t, l, 20)
	cut := all[12].LastOffset // the marker of entry 12 goes
	if err := l.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	if got := l.AllAbortedTxns(); !slices.Equal(got, all[:12]) {
		t.Fatalf("after truncate %v, want %v", got, all[:12])
	}
	if err := l.DeleteBefore(all[6].LastOffset + 1); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.AllAbortedTxns() {
		if a.LastOffset < l.segments[0].base {
			t.Fatalf("entry %v kept below the first segment %d", a, l.segments[0].base)
		}
	}
	l.Close()
	l = openLog(t, fs, "/p", smallConfig())
	defer l.Close()
	got := l.AllAbortedTxns()
	if len(got) == 0 || !slices.Equal(got, all[12-len(got):12]) {
		t.Fatalf("after reopen %v, want a suffix of %v", got, all[:12])
	}
	ents, _ := fs.ReadDir("/p")
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name[:len(e.Name)-len(txnIndexSuffix)] + logSuffix); ok && e.Name[len(e.Name)-len(txnIndexSuffix):] == txnIndexSuffix && b < l.segments[0].base {
			t.Fatalf("txnindex %s left behind a deleted segment", e.Name)
		}
	}
}
