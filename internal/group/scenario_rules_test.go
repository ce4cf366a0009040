package group

import "testing"

func TestProtocolAndLimitScenarios(t *testing.T) {
	noDelay := func(c *Config) { c.InitialRebalanceDelayMs = 0 }
	runScenarios(t, []scenario{
		{name: "the protocol with most first choices wins", cfg: noDelay, steps: []step{
			{0, join("a", protos("range", "roundrobin", "sticky")), []string{"join a: gen=1 proto=range leader=a members=a"}},
			{10, join("b", protos("sticky", "roundrobin")), nil},
			{20, join("c", protos("roundrobin", "sticky")), nil},
			{30, join("a", protos("range", "roundrobin", "sticky")), []string{
				// range is not supported by all; sticky and roundrobin get one
				// vote each from b and c, a votes roundrobin.
				"join a: gen=2 proto=roundrobin leader=a members=a,b,c",
				"join b: gen=2 proto=roundrobin leader=a",
				"join c: gen=2 proto=roundrobin leader=a",
			}},
		}},
		{name: "no common protocol is INCONSISTENT_GROUP_PROTOCOL", cfg: noDelay, steps: []step{
			{0, join("a", protos("range")), []string{"join a: gen=1 proto=range leader=a members=a"}},
			{10, join("b", protos("roundrobin")), []string{"join b: INCONSISTENT_GROUP_PROTOCOL"}},
			{20, join("c", protocolType("connect")), []string{"join c: INCONSISTENT_GROUP_PROTOCOL"}},
			{30, join("d", protos()), []string{"join d: INCONSISTENT_GROUP_PROTOCOL"}},
			{40, describe(), []string{"CompletingRebalance gen=1 proto= leader=a members=a"}},
		}},
		{name: "an empty first join is INCONSISTENT_GROUP_PROTOCOL", steps: []step{
			{0, join("a", protocolType("")), []string{"join a: INCONSISTENT_GROUP_PROTOCOL"}},
			{10, describe(), []string{"Dead gen=0 proto= leader=- members="}},
		}},
		{name: "group.max.size counts members and handed-out ids",
			cfg: func(c *Config) { c.MaxSize = 2; c.InitialRebalanceDelayMs = 0 },
			steps: []step{
				{0, join("a"), []string{"join a: gen=1 proto=range leader=a members=a"}},
				{10, join("b", v4), []string{"join b: MEMBER_ID_REQUIRED"}},
				{20, join("c", v4), []string{"join c: GROUP_MAX_SIZE_REACHED"}},
				{30, join("c", static("ic")), []string{"join c: GROUP_MAX_SIZE_REACHED"}},
				{40, join("b", v4), nil},
				{50, join("a"), []string{
					"join a: gen=2 proto=range leader=a members=a,b",
					"join b: gen=2 proto=range leader=a",
				}},
			}},
		{name: "session timeout outside the broker's range", steps: []step{
			{0, join("a", sessionMs(5999)), []string{"join a: INVALID_SESSION_TIMEOUT"}},
			{0, join("a", sessionMs(300001)), []string{"join a: INVALID_SESSION_TIMEOUT"}},
		}},
		{name: "sync checks member, generation and state", steps: steps(stableAB(),
			step{6030, syncGen("b", 7), []string{"sync b: ILLEGAL_GENERATION"}},
			step{6040, sync("nobody"), []string{"sync nobody: UNKNOWN_MEMBER_ID"}},
			step{6050, heartbeatAs("a", "", 0), []string{"heartbeat a: ILLEGAL_GENERATION"}},
			step{6060, join("a"), nil}, // the leader rejoins
			step{6070, sync("b"), []string{"sync b: REBALANCE_IN_PROGRESS"}},
			step{6080, join("b"), []string{
				"join a: gen=2 proto=range leader=a members=a,b",
				"join b: gen=2 proto=range leader=a",
			}},
			step{6090, heartbeat("b"), []string{"heartbeat b: ok"}},
			step{6100, commit("b", -2, "t-0=1"), []string{"commit: REBALANCE_IN_PROGRESS"}},
			step{6110, sync("b"), nil},
			// A new member while b waits for its assignment: b must rejoin.
			step{6120, join("c"), []string{"sync b: REBALANCE_IN_PROGRESS"}},
		)},
		{name: "a member that never syncs is removed after the rebalance timeout", steps: steps(stableAB()[:4],
			step{6010, sync("a", "a=p0", "b=p1"), []string{`record group g gen=1 members=[a="p0" b="p1"]`, `sync a: "p0"`}},
			step{9000, heartbeat("b"), []string{"heartbeat b: ok"}},
			step{15000, heartbeat("a"), []string{"heartbeat a: ok"}},
			step{17000, heartbeat("b"), []string{"heartbeat b: ok"}},
			step{25000, heartbeat("a"), []string{"heartbeat a: ok"}},
			step{25990, tick(), nil},
			step{26000, tick(), nil},
			step{26010, describe(), []string{"PreparingRebalance gen=1 proto= leader=a members=a"}},
		)},
		{name: "a retried join during CompletingRebalance repeats the answer", steps: steps(stableAB()[:4],
			step{6010, join("a"), []string{"join a: gen=1 proto=range leader=a members=a,b"}},
			step{6020, join("b"), []string{"join b: gen=1 proto=range leader=a"}},
		)},
		{name: "a duplicate parked join gets an answer too", steps: []step{
			{0, join("a", v4), []string{"join a: MEMBER_ID_REQUIRED"}},
			{10, join("a", v4), nil},
			{20, join("a", v4), []string{"join a: REBALANCE_IN_PROGRESS"}},
			{3010, tick(), []string{"join a: gen=1 proto=range leader=a members=a"}},
		}},
		{name: "unload answers parked requests with NOT_COORDINATOR", steps: steps(stableAB()[:5],
			step{7000, func(h *harness) { h.take(h.c.Unload()) }, []string{"sync b: NOT_COORDINATOR"}},
			step{7010, describe(), []string{"Dead gen=0 proto= leader=- members="}},
		)},
		{name: "the last member leaving empties the group", steps: steps(stableAB(),
			step{7000, leave("a", "b", "zz"), []string{`record group g gen=2 members=[]`, "leave: ok,ok,UNKNOWN_MEMBER_ID"}},
			step{7010, describe(), []string{"Empty gen=2 proto= leader=- members="}},
			step{7020, failover(), []string{"failover"}},
			step{7030, join("c"), nil}, // an empty group waits the initial delay again
			step{10030, tick(), []string{"join c: gen=3 proto=range leader=c members=c"}},
		)},
	})
}
