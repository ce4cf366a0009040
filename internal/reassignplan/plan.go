// Package reassignplan is the pure part of `skein partitions reassign`:
// the reassignment JSON of Kafka's kafka-reassign-partitions tool, a
// balanced plan for a set of brokers (--generate), and a moving replica's
// progress. It does no I/O.
package reassignplan

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// Limits on a plan read from a file: far above any real cluster, low enough
// that a wrong file cannot make the tool send an absurd request.
const (
	MaxPartitions = 100_000
	MaxReplicas   = 128
)

// AnyLogDir in log_dirs leaves the replica's directory to the broker.
const AnyLogDir = "any"

// Assignment is one partition's replicas, in preference order (the first
// is the preferred leader).
type Assignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// Plan is the file kafka-reassign-partitions reads and writes:
// {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}.
type Plan struct {
	Version    int          `json:"version"`
	Partitions []Assignment `json:"partitions"`
}

// Parse reads a plan and checks it: version 1, at least one partition,
// each named once with 1..MaxReplicas distinct non-negative brokers, and
// log_dirs (if given) one per replica, each "any" (the broker's least
// loaded directory, or the replica's current one) or an absolute path,
// which the tool asks the broker to move (or create) the replica in
// (AlterReplicaLogDirs), as Kafka's does.
func Parse(data []byte) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("reassignment json: %w", err)
	}
	if p.Version != 1 {
		return Plan{}, fmt.Errorf("reassignment json: version %d, want 1", p.Version)
	}
	if len(p.Partitions) == 0 {
		return Plan{}, errors.New("reassignment json: no partitions")
	}
	if len(p.Partitions) > MaxPartitions {
		return Plan{}, fmt.Errorf("reassignment json: %d partitions exceed %d", len(p.Partitions), MaxPartitions)
	}
	seen := map[topicPartition]bool{}
	for _, a := range p.Partitions {
		tp := topicPartition{a.Topic, a.Partition}
		name := fmt.Sprintf("%s-%d", a.Topic, a.Partition)
		switch {
		case a.Topic == "" || a.Partition < 0:
			return Plan{}, fmt.Errorf("reassignment json: bad partition %q", name)
		case seen[tp]:
			return Plan{}, fmt.Errorf("reassignment json: %s listed twice", name)
		case len(a.Replicas) == 0 || len(a.Replicas) > MaxReplicas:
			return Plan{}, fmt.Errorf("reassignment json: %s has %d replicas, want 1..%d", name, len(a.Replicas), MaxReplicas)
		case a.LogDirs != nil && len(a.LogDirs) != len(a.Replicas):
			return Plan{}, fmt.Errorf("reassignment json: %s has %d log_dirs for %d replicas", name, len(a.LogDirs), len(a.Replicas))
		}
		for i, r := range a.Replicas {
			if r < 0 || slices.Contains(a.Replicas[:i], r) {
				return Plan{}, fmt.Errorf("reassignment json: %s: replica %d negative or listed twice", name, r)
			}
		}
		for _, d := range a.LogDirs {
			if d != AnyLogDir && !filepath.IsAbs(d) {
				return Plan{}, fmt.Errorf("reassignment json: %s: log dir %q: want \"any\" or an absolute path", name, d)
			}
		}
		seen[tp] = true
	}
	return p, nil
}

// Format writes a plan as one line of JSON, as the Kafka tool prints it.
func Format(as []Assignment) []byte {
	as = slices.Clone(as)
	Sort(as)
	out, _ := json.Marshal(Plan{Version: 1, Partitions: as}) // plain structs: cannot fail
	return out
}

// Sort orders assignments by topic, then partition.
func Sort(as []Assignment) {
	slices.SortFunc(as, func(a, b Assignment) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

type topicPartition struct {
	topic     string
	partition int32
}

// Generate places every partition of current on brokers, keeping each
// partition's replication factor (or rf, when positive), balanced: every
// broker ends with as even a share of the replicas, and of the preferred
// leaderships (first replicas), as the counts allow. Among equally loaded
// brokers one that already holds the partition is preferred, so a plan
// moves no more data than balance needs; remaining ties go to the lower
// id, so the plan is the same on every run.
func Generate(current []Assignment, brokers []int32, rf int) ([]Assignment, error) {
	if len(brokers) == 0 {
		return nil, errors.New("no brokers to place replicas on")
	}
	brokers = slices.Clone(brokers)
	slices.Sort(brokers)
	for i := 1; i < len(brokers); i++ {
		if brokers[i] == brokers[i-1] {
			return nil, fmt.Errorf("broker %d listed twice", brokers[i])
		}
	}
	as := slices.Clone(current)
	Sort(as)
	replicas := map[int32]int{}
	leaders := map[int32]int{}
	out := make([]Assignment, 0, len(as))
	for _, a := range as {
		want := len(a.Replicas)
		if rf > 0 {
			want = rf
		}
		if want > len(brokers) {
			return nil, fmt.Errorf("%s-%d: replication factor %d exceeds the %d brokers given", a.Topic, a.Partition, want, len(brokers))
		}
		held := func(b int32) bool { return slices.Contains(a.Replicas, b) }
		chosen := make([]int32, 0, want)
		for range want {
			best := int32(-1)
			for _, b := range brokers {
				if slices.Contains(chosen, b) {
					continue
				}
				if best < 0 || replicas[b] < replicas[best] || replicas[b] == replicas[best] && held(b) && !held(best) {
					best = b
				}
			}
			chosen = append(chosen, best)
			replicas[best]++
		}
		// The preferred leader: the chosen broker leading least so far,
		// the current preferred leader on a tie.
		lead := 0
		for i, b := range chosen {
			l, cur := leaders[b], leaders[chosen[lead]]
			if l < cur || l == cur && len(a.Replicas) > 0 && b == a.Replicas[0] {
				lead = i
			}
		}
		chosen[0], chosen[lead] = chosen[lead], chosen[0]
		leaders[chosen[0]]++
		out = append(out, Assignment{Topic: a.Topic, Partition: a.Partition, Replicas: chosen})
	}
	return out, nil
}

// BytesBehind is how far an added replica is from the leader, from their
// log sizes (DescribeLogDirs): 0 once it holds as much.
func BytesBehind(leaderSize, replicaSize int64) int64 {
	return max(0, leaderSize-replicaSize)
}

// Decommission moves every replica off broker gone: in each partition of
// current that holds it, gone is replaced, at the same position (so a
// preferred leadership passes to the newcomer), by one of brokers not
// already in that partition. The choice spreads racks first: the broker
// whose rack (rackOf; nil or "" for none) the fewest of the partition's
// remaining replicas share, so a partition spread over racks stays spread
// (a broker of gone's own rack always qualifies when there is one); then
// the broker holding the fewest replicas of current so far; then the lower
// id. Only the partitions that change are returned; an error names a
// partition no broker can take.
func Decommission(current []Assignment, gone int32, brokers []int32, rackOf map[int32]string) ([]Assignment, error) {
	as := slices.Clone(current)
	Sort(as)
	load := map[int32]int{}
	for _, b := range brokers {
		load[b] = 0
	}
	for _, a := range as {
		for _, r := range a.Replicas {
			if _, ok := load[r]; ok {
				load[r]++
			}
		}
	}
	candidates := slices.Clone(brokers)
	slices.Sort(candidates)
	var out []Assignment
	for _, a := range as {
		i := slices.Index(a.Replicas, gone)
		if i < 0 {
			continue
		}
		// sharing counts the partition's other replicas on b's rack;
		// brokers without a rack share nothing with anyone.
		sharing := func(b int32) int {
			n := 0
			for _, r := range a.Replicas {
				if r != gone && rackOf[b] != "" && rackOf[r] == rackOf[b] {
					n++
				}
			}
			return n
		}
		best := int32(-1)
		for _, b := range candidates {
			if b == gone || slices.Contains(a.Replicas, b) {
				continue
			}
			if best < 0 || sharing(b) < sharing(best) || (sharing(b) == sharing(best) && load[b] < load[best]) {
				best = b
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("%s-%d: no broker left to take broker %d's replica (replicas %v)", a.Topic, a.Partition, gone, a.Replicas)
		}
		replicas := slices.Clone(a.Replicas)
		replicas[i] = best
		load[best]++
		out = append(out, Assignment{Topic: a.Topic, Partition: a.Partition, Replicas: replicas})
	}
	return out, nil
}
