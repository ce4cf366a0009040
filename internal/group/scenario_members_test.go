package group

import "testing"

func TestMembershipScenarios(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "v4 join answers MEMBER_ID_REQUIRED first", steps: []step{
			{0, join("a", v4), []string{"join a: MEMBER_ID_REQUIRED"}},
			{10, join("a", v4), nil}, // rejoins with the id: parked in the initial delay
			{3010, tick(), []string{"join a: gen=1 proto=range leader=a members=a"}},
			{3020, sync("a", "a=p0"), []string{`record group g gen=1 members=[a="p0"]`, `sync a: "p0"`}},
		}},
		{name: "a pending member id holds the rebalance until it expires",
			cfg: func(c *Config) { c.InitialRebalanceDelayMs = 0 },
			steps: []step{
				{0, join("a", v4), []string{"join a: MEMBER_ID_REQUIRED"}},
				{10, join("a", v4), []string{"join a: gen=1 proto=range leader=a members=a"}},
				{20, join("b", v4), []string{"join b: MEMBER_ID_REQUIRED"}},
				{30, join("a", v4, topics("t", "u")), nil}, // rebalance; b is expected
				{10019, tick(), nil},
				{10020, tick(), []string{"join a: gen=2 proto=range leader=a members=a"}},
				// b's id expired with its session: it must start over.
				{10030, join("b", v4), []string{"join b: UNKNOWN_MEMBER_ID"}},
			}},
		{name: "a pending member that leaves releases the rebalance",
			cfg: func(c *Config) { c.InitialRebalanceDelayMs = 0 },
			steps: []step{
				{0, join("a"), []string{"join a: gen=1 proto=range leader=a members=a"}},
				{20, join("b", v4), []string{"join b: MEMBER_ID_REQUIRED"}},
				{30, join("a", topics("u")), nil},
				{40, leave("b"), []string{"join a: gen=2 proto=range leader=a members=a", "leave: ok"}},
			}},
	})
}

// stableStatic is stableAB with static members a (instance ia) and b (ib).
func stableStatic() []step {
	return []step{
		{0, join("a", static("ia")), nil},
		{100, join("b", static("ib")), nil},
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

func TestStaticMembershipScenarios(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "restarted follower keeps its assignment without a rebalance", steps: steps(stableStatic(),
			step{7000, join("b2", static("ib")), []string{
				`record group g gen=1 members=[a="p0" b2="p1"]`,
				"join b2: gen=1 proto=range leader=a",
			}},
			step{7010, heartbeatAs("b", "ib", 1), []string{"heartbeat b: FENCED_INSTANCE_ID"}},
			step{7020, sync("b2"), []string{`sync b2: "p1"`}},
			step{7030, heartbeatAs("b2", "ib", 1), []string{"heartbeat b2: ok"}},
			step{7040, commit("b@ib", 1, "t-0=1"), []string{"commit: FENCED_INSTANCE_ID"}},
			step{7050, describe(), []string{"Stable gen=1 proto=range leader=a members=a,b2"}},
			step{7060, failover(), []string{"failover"}},
			step{7070, heartbeatAs("b2", "ib", 1), []string{"heartbeat b2: ok"}},
		)},
		{name: "restarted leader is told the old id leads unless it can skip assignment", steps: steps(stableStatic(),
			step{7000, join("a2", static("ia")), []string{
				`record group g gen=1 members=[a2="p0" b="p1"]`,
				"join a2: gen=1 proto=range leader=a",
			}},
			step{8000, join("a3", static("ia"), skipOK), []string{
				`record group g gen=1 members=[a3="p0" b="p1"]`,
				"join a3: gen=1 proto=range leader=a3 members=a3,b skip",
			}},
			step{8010, sync("a3"), []string{`sync a3: "p0"`}},
		)},
		{name: "restart with a protocol nobody else supports is refused", steps: steps(stableStatic(),
			step{7000, join("b2", static("ib"), protos("roundrobin")), []string{"join b2: INCONSISTENT_GROUP_PROTOCOL"}},
			step{7010, heartbeatAs("b", "ib", 1), []string{"heartbeat b: ok"}},
		)},
		{name: "restart that changes the group's protocol rebalances", steps: []step{
			// a prefers roundrobin, b range: a tie, which the leader's order breaks.
			{0, join("a", static("ia"), protos("roundrobin", "range")), nil},
			{10, join("b", static("ib"), protos("range", "roundrobin")), nil},
			{3000, tick(), nil},
			{6000, tick(), []string{
				"join a: gen=1 proto=roundrobin leader=a members=a,b",
				"join b: gen=1 proto=roundrobin leader=a",
			}},
			{6010, sync("a", "a=p0", "b=p1"), []string{`record group g gen=1 members=[a="p0" b="p1"]`, `sync a: "p0"`}},
			// b restarting with roundrobin first keeps roundrobin: no rebalance.
			{7000, join("b2", static("ib"), protos("roundrobin", "range")), []string{
				`record group g gen=1 members=[a="p0" b2="p1"]`,
				"join b2: gen=1 proto=roundrobin leader=a",
			}},
			// a restarting with range first makes it 1:1, leader a now prefers range.
			{8000, join("a2", static("ia"), protos("range", "roundrobin")), nil},
			{8010, join("b2", protos("roundrobin", "range")), []string{
				"join a2: gen=2 proto=range leader=a2 members=a2,b2",
				"join b2: gen=2 proto=range leader=a2",
			}},
		}},
		{name: "replacement during a rebalance fences the parked join", steps: steps(stableStatic(),
			step{7000, join("a", topics("u")), nil},
			step{7010, join("a2", static("ia"), topics("u")), []string{"join a: FENCED_INSTANCE_ID"}},
			step{7020, join("b"), []string{
				"join a2: gen=2 proto=range leader=a2 members=a2,b",
				"join b: gen=2 proto=range leader=a2",
			}},
		)},
		{name: "replacement while the leader assigns starts over", steps: []step{
			{0, join("a", static("ia")), nil},
			{10, join("b", static("ib")), nil},
			{3000, tick(), nil},
			{6000, tick(), []string{
				"join a: gen=1 proto=range leader=a members=a,b",
				"join b: gen=1 proto=range leader=a",
			}},
			{6010, sync("b"), nil},
			{6020, join("b2", static("ib")), []string{"sync b: FENCED_INSTANCE_ID"}},
			{6030, sync("a", "a=p0", "b=p1"), []string{"sync a: REBALANCE_IN_PROGRESS"}},
			{6040, join("a"), []string{
				"join a: gen=2 proto=range leader=a members=a,b2",
				"join b2: gen=2 proto=range leader=a",
			}},
		}},
		{name: "static member that does not rejoin stays in the next generation", steps: steps(stableStatic(),
			step{7000, join("a", topics("u")), nil},
			step{15000, heartbeatAs("b", "ib", 1), []string{"heartbeat b: REBALANCE_IN_PROGRESS"}},
			step{24000, heartbeatAs("b", "ib", 1), []string{"heartbeat b: REBALANCE_IN_PROGRESS"}},
			step{27000, tick(), []string{"join a: gen=2 proto=range leader=a members=a,b"}},
			step{27010, heartbeatAs("b", "ib", 1), []string{"heartbeat b: ILLEGAL_GENERATION"}},
		)},
		{name: "static members leave by instance id", steps: steps(stableStatic(),
			step{7000, leave("@ib"), []string{"leave: ok"}},
			step{7010, leave("a@ib", "@zz"), []string{"leave: UNKNOWN_MEMBER_ID,UNKNOWN_MEMBER_ID"}},
			step{7020, leave("b@ia"), []string{"leave: FENCED_INSTANCE_ID"}},
			step{7030, join("a"), []string{"join a: gen=2 proto=range leader=a members=a"}},
		)},
	})
}
