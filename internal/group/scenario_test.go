package group

import "testing"

// stableAB brings dynamic members a (leader) and b to a stable generation
// 1 at t=6020, a assigned "p0" and b "p1".
func stableAB(opts ...joinOpt) []step {
	return []step{
		{0, join("a", opts...), nil},
		{100, join("b", opts...), nil},
		// b arrived during the initial delay: it is extended once.
		{3000, tick(), nil},
		{6000, tick(), []string{
			"join a: gen=1 proto=range leader=a members=a,b",
			"join b: gen=1 proto=range leader=a",
		}},
		{6010, sync("b"), nil},
		{6020, sync("a", "a=p0", "b=p1"), []string{
			`record group g gen=1 members=[a="p0" b="p1"]`,
			`sync a: "p0"`,
			`sync b: "p1"`,
		}},
	}
}

func steps(prefix []step, rest ...step) []step { return append(prefix, rest...) }

func TestRebalanceScenarios(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "two members elect a leader and sync assignments", steps: steps(stableAB(),
			step{6030, heartbeat("a"), []string{"heartbeat a: ok"}},
			step{6040, describe(), []string{"Stable gen=1 proto=range leader=a members=a,b"}},
			// A follower rejoining with the same metadata is a no-op.
			step{6050, join("b"), []string{"join b: gen=1 proto=range leader=a"}},
			step{6060, failover(), []string{"failover"}},
			step{6070, heartbeat("b"), []string{"heartbeat b: ok"}},
			step{6080, sync("b"), []string{`sync b: "p1"`}},
		)},
		{name: "initial delay ends without newcomers", steps: []step{
			{0, join("a"), nil},
			{2999, tick(), nil},
			{3000, tick(), []string{"join a: gen=1 proto=range leader=a members=a"}},
		}},
		{name: "without initial delay the first join completes at once",
			cfg: func(c *Config) { c.InitialRebalanceDelayMs = 0 },
			steps: []step{
				{0, join("a"), []string{"join a: gen=1 proto=range leader=a members=a"}},
				{10, join("b"), nil},
				{20, join("a"), []string{
					"join a: gen=2 proto=range leader=a members=a,b",
					"join b: gen=2 proto=range leader=a",
				}},
			}},
		{name: "initial delay is bounded by the rebalance timeout", steps: []step{
			{0, join("a", rebalanceMs(7000)), nil},
			{1, join("b", rebalanceMs(7000)), nil},
			{3000, both(join("c", rebalanceMs(7000)), tick()), nil}, // extended to 6000
			{6000, both(join("d", rebalanceMs(7000)), tick()), nil}, // only 1000 left
			{7000, tick(), []string{
				"join a: gen=1 proto=range leader=a members=a,b,c,d",
				"join b: gen=1 proto=range leader=a",
				"join c: gen=1 proto=range leader=a",
				"join d: gen=1 proto=range leader=a",
			}},
		}},
		{name: "leaving member triggers a rebalance", steps: steps(stableAB(),
			step{7000, leave("b"), []string{"leave: ok"}},
			step{7010, heartbeat("a"), []string{"heartbeat a: REBALANCE_IN_PROGRESS"}},
			step{7020, sync("a"), []string{"sync a: REBALANCE_IN_PROGRESS"}},
			step{7030, join("a"), []string{"join a: gen=2 proto=range leader=a members=a"}},
			step{7040, heartbeat("b"), []string{"heartbeat b: UNKNOWN_MEMBER_ID"}},
			step{7050, sync("a", "a=p0p1"), []string{`record group g gen=2 members=[a="p0p1"]`, `sync a: "p0p1"`}},
			step{7060, failover(), []string{"failover"}},
		)},
		{name: "session expiry removes a member", steps: steps(stableAB(),
			step{15000, heartbeat("a"), []string{"heartbeat a: ok"}},
			step{16009, tick(), nil},
			step{16010, tick(), nil}, // b's last sign of life was at 6010
			step{16020, describe(), []string{"PreparingRebalance gen=1 proto= leader=a members=a"}},
			step{16030, join("a"), []string{"join a: gen=2 proto=range leader=a members=a"}},
		)},
		{name: "members that do not rejoin are dropped at the rebalance timeout", steps: steps(stableAB(),
			step{7000, join("a"), nil}, // the leader rejoins: rebalance
			step{15000, heartbeat("b"), []string{"heartbeat b: REBALANCE_IN_PROGRESS"}},
			step{26999, both(heartbeat("b"), tick()), []string{"heartbeat b: REBALANCE_IN_PROGRESS"}},
			step{27000, tick(), []string{"join a: gen=2 proto=range leader=a members=a"}},
			step{27010, heartbeat("b"), []string{"heartbeat b: UNKNOWN_MEMBER_ID"}},
		)},
		{name: "leader leaving mid-rebalance hands leadership to a joined member", steps: steps(stableAB(),
			step{7000, join("b"), []string{"join b: gen=1 proto=range leader=a"}},
			step{7001, join("b", topics("t", "u")), nil}, // new subscription: rebalance
			step{7010, leave("a"), []string{"join b: gen=2 proto=range leader=b members=b", "leave: ok"}},
		)},
	})
}
