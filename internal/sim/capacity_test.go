package sim

import (
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"
)

// capacityOptions is the run TestReplicaCapacitySeeds makes of a swarm
// seed: every broker registers the replica capacity the run's topic
// creation just fits in (plus a slack of 0 or 1), with two or three
// replicas a partition; the operator reassigns partitions (with
// replication factor changes, which add replicas) and the balancer runs
// in every other seed, among the seed's other faults.
func capacityOptions(seed uint64, d time.Duration) Options {
	o := faultySwarm(seed, d)
	o.Faults.Reassign = true
	// Two replicas a partition in two seeds of three: brokers then hold
	// uneven counts, and one at its capacity lacks partitions that a
	// move could bring it (with three on three nodes each holds all).
	if seed%3 != 0 {
		o.ReplicationFactor = 2
	}
	o.Balancer = seed%2 == 0
	o.ReplicaCapacity = true
	o.ReplicaCapacitySlack = int(seed/2) % 2
	// In half the seeds, balancer or not, a node restarts with a lower
	// capacity than it holds.
	o.ReplicaCapacityShrink = seed%4 < 2
	return o
}

// TestReplicaCapacitySeeds: with brokers that can keep only so many
// replicas open, the controller refuses every reassignment that would
// place more on one (INVALID_REPLICA_ASSIGNMENT), no committed image ever
// does, whatever the faults, and the checks of every run hold.
func TestReplicaCapacitySeeds(t *testing.T) {
	var total Stats
	seeds := seedBatch(t, func(seed uint64) Options { return capacityOptions(seed, *flagDuration) }, func(r Result) {
		total.Reassignments += r.Stats.Reassignments
		total.CapacityRefusals += r.Stats.CapacityRefusals
		total.BalancerMoves += r.Stats.BalancerMoves
		total.BalancerRefusals += r.Stats.BalancerRefusals
		total.CapacityShrinks += r.Stats.CapacityShrinks
		total.BalancerDrains += r.Stats.BalancerDrains
	})
	if seeds == 0 {
		return
	}
	t.Logf("%d seeds: %d reassignments asked, %d refused for a broker's replica capacity; %d balancer moves, %d refused; %d capacities shrunk below what a node holds, %d balancer moves off such a node",
		seeds, total.Reassignments, total.CapacityRefusals, total.BalancerMoves, total.BalancerRefusals, total.CapacityShrinks, total.BalancerDrains)
	if total.CapacityRefusals == 0 && seeds >= 20 {
		t.Error("no reassignment met a full broker: the runs do not exercise the capacity check")
	}
	if (total.CapacityShrinks == 0 || total.BalancerDrains == 0) && seeds >= 40 {
		t.Error("no capacity shrank below what a node holds, or the balancer never moved replicas off such a node: the runs do not exercise the drain")
	}
}

// TestReplicaCapacityCheckerCatches: the capacity check fails a run in
// which a broker holds more replicas than it can keep open (the checker
// holding the brokers to one fewer than they registered, so the
// controller lets reassignments fill the last place).
func TestReplicaCapacityCheckerCatches(t *testing.T) {
	const seed = 2
	cryptotest.SetGlobalRandom(t, seed)
	o := capacityOptions(seed, 10*time.Second)
	o.ReplicaCapacitySlack = 1
	o.capacityUnderstated = true
	r := Run(o)
	if !slices.ContainsFunc(r.Violations, func(v string) bool { return strings.Contains(v, "more than the") }) {
		t.Errorf("seed %d: violations %q, want one of a broker holding more replicas than it can keep open", seed, r.Violations)
	}
}
