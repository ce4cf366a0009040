package replica

import (
	"testing"

	"github.com/skein-log/skein/internal/producer"
)

// The completed transactions kept for the LSO are bounded; merging them
// keeps the LSO at or below the exact one, never lets it go back, and
// lets it reach the high watermark once that passes every marker.
func TestPendingTransactionsBounded(t *testing.T) {
	r := &Replica{producers: producer.NewTable(1)}
	const txns = 3 * maxPending
	exact := make([]producer.CompletedTxn, txns)
	for i := range exact {
		exact[i] = producer.CompletedTxn{ProducerID: int64(i), FirstOffset: int64(10 * i), LastOffset: int64(10*i + 5)}
		r.addPending(exact[i])
	}
	if len(r.pending) >= maxPending {
		t.Fatalf("%d pending kept, bound %d", len(r.pending), maxPending)
	}
	prev, next := int64(-1), 0 // next: the first exact entry whose marker is not below hw
	for hw := int64(0); hw <= 10*txns; hw += 3 {
		r.hw = hw
		for next < len(exact) && exact[next].LastOffset < hw {
			next++
		}
		want := hw
		if next < len(exact) {
			want = min(want, exact[next].FirstOffset)
		}
		got := r.LastStableOffset()
		if got > want || got < prev {
			t.Fatalf("hw %d: LSO %d, exact %d, previous %d", hw, got, want, prev)
		}
		prev = got
	}
	if r.LastStableOffset() != r.hw {
		t.Fatalf("LSO %d once every marker is below the HW %d", r.LastStableOffset(), r.hw)
	}
}
