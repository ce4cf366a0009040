package verify

import (
	"maps"
	"strings"
	"testing"
)

// txnHistory builds txn workload histories: producer 1 writes
// transactions of two records, one in each partition; offsets count up
// per partition, one more for each transaction's marker.
type txnHistory struct {
	*historyBuilder
	next map[int32]int64
	seq  int64
	// records of each transaction, by name: values and offsets
	values  map[string][]string
	offsets map[string][]int64
}

func newTxnHistory() *txnHistory {
	b := newHistory(AcksAll, true)
	b.h.Meta.Workload = WorkloadTxn
	return &txnHistory{historyBuilder: b, next: map[int32]int64{}, values: map[string][]string{}, offsets: map[string][]int64{}}
}

// txn writes transaction name, acknowledging its records, and ends it
// asking for note ("commit" or "abort") with err as the answer.
func (b *txnHistory) txn(name, note, err string) *txnHistory {
	for p := range int32(2) {
		b.seq++
		v := value(1, b.seq)
		b.add(Event{Type: EventSend, Producer: 1, Seq: b.seq, Partition: p, Value: v, Txn: name})
		b.add(Event{Type: EventAck, Producer: 1, Seq: b.seq, Partition: p, Offset: b.next[p], Value: v, Txn: name})
		b.values[name] = append(b.values[name], v)
		b.offsets[name] = append(b.offsets[name], b.next[p])
		b.next[p] += 2 // the record, then the marker
	}
	b.add(Event{Type: EventTxnEnd, Producer: 1, Txn: name, Note: note, Err: err})
	return b
}

// readTxn has consumer c read transaction name's records (partition i
// holds record i) at their acknowledged offsets.
func (b *txnHistory) readTxn(c int, name string) *txnHistory {
	for i, v := range b.values[name] {
		b.read(c, int32(i), b.offsets[name][i], v)
	}
	return b
}

func TestCheckTxn(t *testing.T) {
	// t1 committed, t2 aborted, t3 a commit with an unknown outcome.
	base := func() *txnHistory {
		return newTxnHistory().txn("p1.t1", "commit", "").txn("p1.t2", "abort", "").txn("p1.t3", "commit", "i/o timeout")
	}
	tests := []struct {
		name  string
		build func() *txnHistory
		want  map[Kind]int
	}{
		{"valid, the unknown one committed", func() *txnHistory {
			return base().readTxn(1, "p1.t1").readTxn(2, "p1.t1").readTxn(1, "p1.t3").readTxn(2, "p1.t3")
		}, nil},
		{"valid, the unknown one aborted", func() *txnHistory {
			return base().readTxn(1, "p1.t1").readTxn(2, "p1.t1")
		}, nil},
		{"a committed record missing", func() *txnHistory {
			b := base().readTxn(1, "p1.t1")
			b.read(2, 0, b.offsets["p1.t1"][0], b.values["p1.t1"][0])
			return b
		}, map[Kind]int{TxnLost: 1}},
		{"a partial transaction", func() *txnHistory {
			b := base().readTxn(1, "p1.t1").readTxn(2, "p1.t1").readTxn(1, "p1.t3")
			b.read(2, 0, b.offsets["p1.t3"][0], b.values["p1.t3"][0])
			return b
		}, map[Kind]int{TxnPartial: 1}},
		{"unknown, read whole by one consumer only", func() *txnHistory {
			return base().readTxn(1, "p1.t1").readTxn(2, "p1.t1").readTxn(1, "p1.t3")
		}, map[Kind]int{TxnPartial: 1}},
		{"an aborted record delivered", func() *txnHistory {
			b := base().readTxn(1, "p1.t1").readTxn(2, "p1.t1")
			b.read(2, 1, b.offsets["p1.t2"][1], b.values["p1.t2"][1])
			return b
		}, map[Kind]int{AbortedRead: 1}},
		{"a duplicate at another offset", func() *txnHistory {
			b := base().readTxn(1, "p1.t1").readTxn(2, "p1.t1")
			b.read(1, 0, 99, b.values["p1.t1"][0])
			return b
		}, map[Kind]int{ReadTwice: 1, Duplicated: 1}},
		{"read twice, going backwards", func() *txnHistory {
			return base().readTxn(1, "p1.t1").readTxn(2, "p1.t1").readTxn(2, "p1.t1")
		}, map[Kind]int{ReadTwice: 2, NonMonotonicPoll: 2}},
		{"another value at an acknowledged offset", func() *txnHistory {
			b := base().readTxn(1, "p1.t1").readTxn(2, "p1.t1")
			b.read(1, 0, b.offsets["p1.t2"][0], "p9-1")
			return b
		}, map[Kind]int{InconsistentOffset: 1, Phantom: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.build().h
			r := CheckTxn(&h)
			expectKinds(t, r, h.Meta, tt.want)
			if r.TxnCommitted != 1 || r.TxnAborted != 1 || r.TxnUnknown != 1 {
				t.Fatalf("outcomes %d committed, %d aborted, %d unknown; want 1 each", r.TxnCommitted, r.TxnAborted, r.TxnUnknown)
			}
			v := r.Verdict(h.Meta)
			if !strings.Contains(v, "transactions: 1 committed, 1 aborted, 1 with unknown outcome") || !strings.Contains(v, string(TxnPartial)) {
				t.Fatalf("verdict lacks the transaction lines:\n%s", v)
			}
		})
	}
}

// expectKinds fails the test unless r counts exactly want (nil: no
// anomaly) and is valid just when want is empty.
func expectKinds(t *testing.T, r *Result, m Meta, want map[Kind]int) {
	t.Helper()
	got := map[Kind]int{}
	for k, n := range r.Counts {
		if n > 0 {
			got[k] = n
		}
	}
	if want == nil {
		want = map[Kind]int{}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v\n%s", got, want, r.Verdict(m))
	}
	if r.Valid != (len(want) == 0) {
		t.Fatalf("valid %t with %v", r.Valid, got)
	}
}

// An abort that errored is still an abort: its records must not be read.
func TestCheckTxnFailedAbortIsAbort(t *testing.T) {
	b := newTxnHistory().txn("p1.t1", "abort", "coordinator not available")
	b.readTxn(1, "p1.t1")
	h := b.h
	r := CheckTxn(&h)
	if r.Valid || r.Counts[AbortedRead] != 2 || r.TxnAborted != 1 {
		t.Fatalf("want 2 aborted reads of an aborted transaction, got %v\n%s", r.Counts, r.Verdict(h.Meta))
	}
}
