package replica

import (
	"testing"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/vfs"
)

// fixedThrottle throttles the partitions it has allowances for.
type fixedThrottle struct {
	allow map[int]int
	took  map[int]int
}

func (f *fixedThrottle) Allowance(i int) (int, bool) {
	n, ok := f.allow[i]
	return n, ok
}
func (f *fixedThrottle) Took(i, n int) { f.took[i] += n }

// TestReadFetchThrottle: a throttled partition whose allowance is spent
// answers its bounds and no records, while an unthrottled partition of the
// same fetch is read; a throttled one with allowance left returns at least
// one batch (never split) and its bytes are counted.
func TestReadFetchThrottle(t *testing.T) {
	tests := []struct {
		name      string
		allow     map[int]int
		wantData  [2]bool
		wantTaken map[int]bool
	}{
		{"nothing throttled", map[int]int{}, [2]bool{true, true}, nil},
		{"first spent, second unthrottled", map[int]int{0: 0}, [2]bool{false, true}, nil},
		{"both spent", map[int]int{0: 0, 1: 0}, [2]bool{false, false}, nil},
		{"one byte left returns a whole batch", map[int]int{0: 1}, [2]bool{true, true}, map[int]bool{0: true}},
		{"second throttled with room", map[int]int{1: 1 << 20}, [2]bool{true, true}, map[int]bool{1: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			srcs := []Source{coreSource{leaderOf(t, fs, "a-0", 0, 3)}, coreSource{leaderOf(t, fs, "b-0", 0, 3)}}
			params := api.FetchParams{ReplicaID: 2, MaxBytes: 1 << 20, MinBytes: 1, Partitions: []api.FetchPartition{
				{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1},
				{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1},
			}}
			th := &fixedThrottle{allow: tt.allow, took: map[int]int{}}
			results, _ := ReadFetch(params, func(i int) (Source, error) { return srcs[i], nil }, true, 100, th)
			for i, res := range results {
				if res.Err != nil {
					t.Fatalf("partition %d: %v", i, res.Err)
				}
				if got := len(res.Records) > 0; got != tt.wantData[i] {
					t.Errorf("partition %d returned %d bytes, want data %v", i, len(res.Records), tt.wantData[i])
				}
				if res.HighWatermark < 0 || res.LogStartOffset < 0 {
					t.Errorf("partition %d: bounds missing from the answer: %+v", i, res)
				}
				if tt.wantTaken[i] != (th.took[i] > 0) || th.took[i] != 0 && th.took[i] != len(res.Records) {
					t.Errorf("partition %d: took %d of %d bytes returned, want counted %v", i, th.took[i], len(res.Records), tt.wantTaken[i])
				}
			}
		})
	}
}
