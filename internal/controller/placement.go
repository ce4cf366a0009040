package controller

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// MaxPlacementBrokers bounds the broker list PlaceReplicas accepts; it keeps
// the start-offset arithmetic far from overflow.
const MaxPlacementBrokers = 100_000

// BrokerInfo is what placement needs to know about a broker.
type BrokerInfo struct {
	ID   int32
	Rack string
}

// PlaceReplicas assigns rf replicas to each of partitions partitions, the way
// Kafka's rack-aware round robin does:
//
//   - Brokers are ordered so racks alternate (rack A's first broker, rack B's
//     first, ..., rack A's second, ...). Racks are used only if every broker
//     has one; otherwise brokers are simply ordered by ID.
//   - Partition p's leader is broker (start+p) mod n of that order, so
//     leaderships differ by at most one between brokers.
//   - Followers are taken from the brokers after the leader with a gap that
//     grows by one every n partitions, so that a broker's followers are not
//     always the same brokers and load spreads when one fails.
//   - Each follower is taken from a rack not yet holding a replica of the
//     partition while such a rack remains; then from any remaining broker.
//
// The result depends only on the inputs (brokers are sorted first, so their
// order does not matter). Callers pass start, e.g. derived from the topic
// name, so that different topics do not all lead on the same broker.
func PlaceReplicas(brokers []BrokerInfo, partitions int, rf int, start int) ([][]int32, error) {
	if partitions <= 0 || partitions > metadata.MaxPartitionsPerTopic {
		return nil, errorf(kerr.InvalidPartitions, "number of partitions %d must be in 1..%d", partitions, metadata.MaxPartitionsPerTopic)
	}
	if rf <= 0 || rf > metadata.MaxReplicas {
		return nil, errorf(kerr.InvalidReplicationFactor, "replication factor %d must be in 1..%d", rf, metadata.MaxReplicas)
	}
	if rf > len(brokers) {
		return nil, errorf(kerr.InvalidReplicationFactor, "replication factor %d is larger than the %d available brokers", rf, len(brokers))
	}
	if len(brokers) > MaxPlacementBrokers {
		return nil, errorf(kerr.InvalidRequest, "%d brokers exceed the placement limit of %d", len(brokers), MaxPlacementBrokers)
	}
	order, rackOf, err := arrangeBrokers(brokers)
	if err != nil {
		return nil, err
	}
	n := len(order)
	gaps := max(n-1, 1)
	// Only start modulo n*(n-1) matters (n for the leader, n-1 for the gap),
	// and reducing it keeps start+p from overflowing.
	period := n * gaps
	base := (start%period + period) % period

	numRacks := countDistinct(rackOf)
	out := make([][]int32, partitions)
	for p := range partitions {
		v := base + p
		first := v % n
		shift := (v / n) % gaps
		out[p] = placeOne(order, rackOf, numRacks, first, shift, rf)
	}
	return out, nil
}

// placeOne picks one partition's replicas: the leader at order[first], then
// followers scanned in the order first+1+((shift+k) mod (n-1)), k = 0..n-2,
// which visits every other broker exactly once.
func placeOne(order []int32, rackOf []string, numRacks, first, shift, rf int) []int32 {
	n := len(order)
	replicas := make([]int32, 0, rf)
	chosen := make([]bool, n)
	racksUsed := map[string]bool{}
	take := func(i int) {
		replicas = append(replicas, order[i])
		chosen[i] = true
		racksUsed[rackOf[i]] = true
	}
	take(first)
	candidate := func(k int) int { return (first + 1 + (shift+k)%(n-1)) % n }
	// Pass 1 spreads over racks: a broker on an already used rack is skipped
	// until every rack holds a replica. Without racks every rack is "".
	for k := 0; k < n-1 && len(replicas) < rf; k++ {
		i := candidate(k)
		if !racksUsed[rackOf[i]] || len(racksUsed) == numRacks {
			take(i)
		}
	}
	// Pass 2 fills from whatever is left, in the same order.
	for k := 0; k < n-1 && len(replicas) < rf; k++ {
		if i := candidate(k); !chosen[i] {
			take(i)
		}
	}
	return replicas
}

// arrangeBrokers sorts brokers by ID and, if all have racks, interleaves the
// racks. It returns the IDs in placement order and each one's rack.
func arrangeBrokers(brokers []BrokerInfo) ([]int32, []string, error) {
	sorted := slices.SortedFunc(slices.Values(brokers), func(a, b BrokerInfo) int { return cmp.Compare(a.ID, b.ID) })
	allRacked := true
	for i, b := range sorted {
		if i > 0 && sorted[i-1].ID == b.ID {
			return nil, nil, errorf(kerr.InvalidRequest, "broker %d listed twice for placement", b.ID)
		}
		if b.Rack == "" {
			allRacked = false
		}
	}
	ids := make([]int32, 0, len(sorted))
	racks := make([]string, 0, len(sorted))
	if !allRacked {
		for _, b := range sorted {
			ids = append(ids, b.ID)
			racks = append(racks, "")
		}
		return ids, racks, nil
	}
	byRack := map[string][]int32{}
	for _, b := range sorted {
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	rackNames := slices.Sorted(maps.Keys(byRack))
	for round := 0; len(ids) < len(sorted); round++ {
		for _, r := range rackNames {
			if round < len(byRack[r]) {
				ids = append(ids, byRack[r][round])
				racks = append(racks, r)
			}
		}
	}
	return ids, racks, nil
}

func countDistinct(values []string) int {
	seen := map[string]bool{}
	for _, v := range values {
		seen[v] = true
	}
	return len(seen)
}

// placementStart derives a deterministic start offset from a topic name, so
// topics spread their leaders over different brokers without randomness.
func placementStart(topic string) int {
	h := fnv.New32a()
	h.Write([]byte(topic)) // hash.Hash writes never fail
	return int(h.Sum32())
}
