package sim

import (
	"strings"
	"testing"
	"time"

	"testing/cryptotest"
)

// aclSeed is a run with the authorizer, the ACL toggler and prober, and
// kills, power losses, partitions and pauses (so controller failovers
// happen while ACLs change).
func aclSeed(seed uint64) Options {
	return Options{Seed: seed, Nodes: 3, Partitions: 2, Duration: 10 * time.Second, ACLs: true,
		Faults:    FaultMix{Every: 700 * time.Millisecond, Kill: true, PowerLoss: true, Partition: true, Pause: true},
		Producers: []ProducerSpec{{Acks: -1, Idempotent: true}, {Acks: 1}}, Consumers: 1}
}

// TestACLs: across faults and controller failovers, every write of the
// ACL prober is served or refused as the serving broker's image said when
// the request arrived, and the other clients (a super user) still pass
// every replication check; the runs see both grants and revocations.
func TestACLs(t *testing.T) {
	var allowed, denied int64
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			r := Run(aclSeed(seed))
			report(t, r)
			allowed += r.Stats.ACLAllowed
			denied += r.Stats.ACLDenied
		})
	}
	t.Logf("prober writes: %d allowed, %d refused", allowed, denied)
	if allowed == 0 || denied == 0 {
		t.Fatalf("the runs did not exercise both outcomes (%d allowed, %d refused): the checker checked nothing", allowed, denied)
	}
}

// TestACLCheckerCatchesAnUnauthorizedWrite: with the authorizer left out
// of the brokers' configuration, the prober writes while its image
// grants it nothing, and the checker says so.
func TestACLCheckerCatchesAnUnauthorizedWrite(t *testing.T) {
	o := aclSeed(1)
	o.Faults = FaultMix{}
	o.authorizerOff = true
	cryptotest.SetGlobalRandom(t, o.Seed)
	r := Run(o)
	if len(r.Violations) == 0 || !strings.Contains(r.Violations[0], "did not allow") {
		t.Fatalf("violations %q, want an unauthorized write", r.Violations)
	}
}

// TestACLDeterminism: an ACL run replays bit for bit from its seed.
func TestACLDeterminism(t *testing.T) {
	var hashes [2]uint64
	for i := range hashes {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, 3)
			hashes[i] = Run(aclSeed(3)).TraceHash
		})
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("trace hashes %016x and %016x differ", hashes[0], hashes[1])
	}
}
