package replica

import (
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// ListOffset answers from the log below the high watermark only: a record
// the ISR does not hold yet is never named, whatever the timestamp asked.
// The broker and the simulator both answer ListOffsets with it.
func TestListOffset(t *testing.T) {
	r := leaderOf(t, vfs.NewMem(), "lo-0", 3, 0)
	produce := func(ts int64) {
		r.Produce(api.ProduceParams{Acks: 0, Timeout: time.Second,
			Batches: [][]byte{batch.Build([][]byte{[]byte("a"), []byte("b"), []byte("c")}, ts)}}, func(api.ProduceResult) {}, 1)
		d, err := r.Log().Sync()
		r.Synced(d, err)
	}
	produce(1000) // offsets 0-2
	produce(3000) // 3-5
	produce(2000) // 6-8: timestamps need not grow
	if _, err := r.OnFollowerFetch(2, 9, 2, nil); err != nil {
		t.Fatal(err)
	}
	produce(4000) // 9-11: above the high watermark
	hw := r.HighWatermark()
	if hw != 9 {
		t.Fatalf("high watermark %d, want 9", hw)
	}
	tests := []struct {
		ts         int64
		wantOffset int64
		wantTs     int64
	}{
		{-1, 9, -1},     // latest: the high watermark
		{-2, 0, -1},     // earliest
		{-3, -1, -1},    // the largest timestamp is above the high watermark: none, as in Kafka
		{0, 0, 1000},    // before everything
		{1500, 3, 3000}, // the first record at or after, in offset order
		{2500, 3, 3000},
		{3001, -1, -1}, // only a record above the high watermark has it
	}
	for _, tc := range tests {
		got, err := ListOffset(r.Log(), tc.ts, hw, r.LeaderEpoch())
		if err != nil {
			t.Fatalf("ts %d: %v", tc.ts, err)
		}
		if got.Offset != tc.wantOffset || got.Timestamp != tc.wantTs {
			t.Errorf("ts %d: offset %d timestamp %d, want %d %d", tc.ts, got.Offset, got.Timestamp, tc.wantOffset, tc.wantTs)
		}
		if tc.wantOffset >= 0 && got.LeaderEpoch != 3 {
			t.Errorf("ts %d: leader epoch %d, want 3", tc.ts, got.LeaderEpoch)
		}
	}
	if _, err := ListOffset(r.Log(), -4, hw, 3); err == nil {
		t.Fatal("timestamp -4 was answered; want INVALID_REQUEST")
	}
}
