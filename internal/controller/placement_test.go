package controller

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

func brokerInfos(racks ...string) []BrokerInfo {
	out := make([]BrokerInfo, len(racks))
	for i, r := range racks {
		out[i] = BrokerInfo{ID: int32(i + 1), Rack: r}
	}
	return out
}

func TestPlaceReplicasExamples(t *testing.T) {
	tests := []struct {
		name       string
		brokers    []BrokerInfo
		partitions int
		rf         int
		start      int
		want       [][]int32
	}{
		{
			name:    "no racks, round robin with growing follower gap",
			brokers: brokerInfos("", "", ""), partitions: 4, rf: 2, start: 0,
			want: [][]int32{{1, 2}, {2, 3}, {3, 1}, {1, 3}},
		},
		{
			name:    "start rotates leaders",
			brokers: brokerInfos("", "", ""), partitions: 3, rf: 1, start: 1,
			want: [][]int32{{2}, {3}, {1}},
		},
		{
			name:    "negative start is normalised",
			brokers: brokerInfos("", "", ""), partitions: 3, rf: 1, start: -1,
			want: [][]int32{{3}, {1}, {2}},
		},
		{
			name:    "racks alternate and followers avoid the leader's rack",
			brokers: brokerInfos("a", "a", "b", "b"), partitions: 5, rf: 2, start: 0,
			// rack-alternating order is 1(a) 3(b) 2(a) 4(b)
			want: [][]int32{{1, 3}, {3, 2}, {2, 4}, {4, 1}, {1, 4}},
		},
		{
			name:    "missing rack on one broker disables rack awareness",
			brokers: brokerInfos("a", "a", "", "b"), partitions: 2, rf: 2, start: 0,
			want: [][]int32{{1, 2}, {2, 3}},
		},
		{
			name:    "rf equals broker count",
			brokers: brokerInfos("", "", ""), partitions: 2, rf: 3, start: 0,
			want: [][]int32{{1, 2, 3}, {2, 3, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlaceReplicas(tc.brokers, tc.partitions, tc.rf, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlaceReplicasRejects(t *testing.T) {
	three := brokerInfos("", "", "")
	tests := []struct {
		name       string
		brokers    []BrokerInfo
		partitions int
		rf         int
		want       *kerr.Error
	}{
		{"zero partitions", three, 0, 1, kerr.InvalidPartitions},
		{"too many partitions", three, metadata.MaxPartitionsPerTopic + 1, 1, kerr.InvalidPartitions},
		{"zero rf", three, 1, 0, kerr.InvalidReplicationFactor},
		{"rf above brokers", three, 1, 4, kerr.InvalidReplicationFactor},
		{"no brokers", nil, 1, 1, kerr.InvalidReplicationFactor},
		{"duplicate broker", []BrokerInfo{{ID: 1}, {ID: 1}}, 1, 1, kerr.InvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlaceReplicas(tc.brokers, tc.partitions, tc.rf, 0)
			wantCode(t, err, tc.want)
		})
	}
}

func TestPlaceReplicasIgnoresInputOrder(t *testing.T) {
	in := brokerInfos("a", "b", "c", "a", "b")
	reversed := slices.Clone(in)
	slices.Reverse(reversed)
	a, err := PlaceReplicas(in, 20, 3, 12345)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PlaceReplicas(reversed, 20, 3, 12345)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("placement depends on input order:\n%v\n%v", a, b)
	}
}

// TestPlaceReplicasProperties sweeps broker counts, rack layouts, replication
// factors, partition counts and start offsets, checking the invariants every
// placement must have.
func TestPlaceReplicasProperties(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for numRacks := 0; numRacks <= 4; numRacks++ {
			brokers := make([]BrokerInfo, n)
			for i := range brokers {
				brokers[i].ID = int32(10 + 3*i) // non-contiguous IDs
				if numRacks > 0 {
					brokers[i].Rack = fmt.Sprintf("rack-%d", (i*7)%numRacks) // uneven racks
				}
			}
			racks := map[int32]string{}
			for _, b := range brokers {
				racks[b.ID] = b.Rack
			}
			distinctRacks := countDistinct(slices.Collect(maps.Values(racks)))
			for rf := 1; rf <= min(n, 4); rf++ {
				for _, partitions := range []int{1, n, n + 1, 3*n + 2, n * max(n-1, 1)} {
					for _, start := range []int{0, 1, 7, 1 << 30} {
						name := fmt.Sprintf("n=%d racks=%d rf=%d p=%d start=%d", n, numRacks, rf, partitions, start)
						checkPlacement(t, name, brokers, racks, distinctRacks, partitions, rf, start)
					}
				}
			}
		}
	}
}

func checkPlacement(t *testing.T, name string, brokers []BrokerInfo, racks map[int32]string, distinctRacks, partitions, rf, start int) {
	t.Helper()
	placed, err := PlaceReplicas(brokers, partitions, rf, start)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(placed) != partitions {
		t.Fatalf("%s: %d partitions placed", name, len(placed))
	}
	leaders := map[int32]int{}
	replicas := map[int32]int{}
	for _, b := range brokers {
		leaders[b.ID], replicas[b.ID] = 0, 0
	}
	for p, rs := range placed {
		if len(rs) != rf {
			t.Fatalf("%s: partition %d has %d replicas", name, p, len(rs))
		}
		usedRacks := map[string]bool{}
		for i, r := range rs {
			if _, ok := racks[r]; !ok {
				t.Fatalf("%s: partition %d uses unknown broker %d", name, p, r)
			}
			if slices.Contains(rs[:i], r) {
				t.Fatalf("%s: partition %d repeats broker %d: %v", name, p, r, rs)
			}
			usedRacks[racks[r]] = true
			replicas[r]++
		}
		// Rack awareness applies only when every broker has a rack.
		if distinctRacks > 1 && racks[rs[0]] != "" && len(usedRacks) != min(rf, distinctRacks) {
			t.Fatalf("%s: partition %d replicas %v span %d racks, want %d", name, p, rs, len(usedRacks), min(rf, distinctRacks))
		}
		leaders[rs[0]]++
	}
	if spread := maxMinusMin(leaders); spread > 1 {
		t.Fatalf("%s: leader counts %v differ by %d", name, leaders, spread)
	}
	// Over one full period without racks every broker carries the same load.
	if distinctRacks <= 1 && len(brokers) > 1 && partitions == len(brokers)*(len(brokers)-1) {
		if spread := maxMinusMin(replicas); spread != 0 {
			t.Fatalf("%s: replica counts %v are uneven over a full period", name, replicas)
		}
	}
}

func maxMinusMin(counts map[int32]int) int {
	lo, hi := -1, 0
	for _, c := range counts {
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return hi - lo
}
