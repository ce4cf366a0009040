package sim

import (
	"testing"
	"testing/cryptotest"
)

// TestGroups runs seeds where group members consume through a consumer
// group, and a simple consumer commits and fetches offsets, while
// coordinators and members crash, nodes lose power and get partitioned
// away: assignments stay disjoint, an acknowledged commit survives every
// coordinator failover, a resuming member skips nothing, and the group
// settles once the faults heal.
func TestGroups(t *testing.T) {
	var commits, syncs, memberCrashes int64
	// A tenth of -sim.seeds (20 by default): these runs are all groups.
	seeds := uint64(max(*flagSeeds/10, 20))
	first := *flagFirst
	if *flagSeed != 0 { // replay one seed
		first, seeds = *flagSeed, 1
	}
	for seed := first; seed < first+seeds; seed++ {
		t.Run("", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			o := groupSeed(seed)
			o.Duration = *flagDuration
			o.Verbose = *flagSeed == seed
			o.Out = func(s string) { t.Log(s) }
			r := Run(o)
			report(t, r)
			commits += r.Stats.GroupCommits
			syncs += r.Stats.GroupSyncs
			memberCrashes += r.Stats.MemberCrashes
		})
	}
	// One replayed seed need not crash a member; a batch must.
	if seeds > 1 && (commits == 0 || syncs == 0 || memberCrashes == 0) {
		t.Fatalf("the runs did not exercise groups: %d commits acknowledged, %d syncs, %d member crashes", commits, syncs, memberCrashes)
	}
}
