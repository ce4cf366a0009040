package group

import (
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesKafka(t *testing.T) {
	tests := []struct {
		group      string
		partitions int32
		want       int32
	}{
		{"hello", 50, 99162322 % 50}, // Java: "hello".hashCode() == 99162322
		{"", 50, 0},
		{"polygenelubricants", 50, 0}, // hashCode is Integer.MIN_VALUE; Kafka's abs maps it to 0
		{"hello", 0, 0},
	}
	for _, tt := range tests {
		if got := PartitionFor(tt.group, tt.partitions); got != tt.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tt.group, tt.partitions, got, tt.want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	if _, err := New(DefaultConfig(), 1); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := []func(*Config){
		func(c *Config) { c.InitialRebalanceDelayMs = -1 },
		func(c *Config) { c.MinSessionTimeoutMs = 0 },
		func(c *Config) { c.MaxSessionTimeoutMs = c.MinSessionTimeoutMs - 1 },
		func(c *Config) { c.MaxSize = 0 },
		func(c *Config) { c.OffsetsRetentionMs = 0 },
		func(c *Config) { c.MaxOffsetMetadataBytes = -1 },
	}
	for i, f := range bad {
		cfg := DefaultConfig()
		f(&cfg)
		if _, err := New(cfg, 1); err == nil {
			t.Errorf("bad config %d accepted", i)
		}
	}
}

func TestApplySkipsUnknownAndRejectsGarbage(t *testing.T) {
	c, _ := New(testConfig(), 1)
	if err := c.Apply(0, Record{Key: []byte{0, 9, 1, 2}, Value: []byte{1}}); err != nil {
		t.Errorf("unknown key version: %v", err)
	}
	for _, rec := range []Record{
		{Key: []byte{0}},
		{Key: []byte{0, 1, 0}, Value: []byte{0, 3}},
		{Key: groupMetadataKey("g"), Value: []byte{0, 3, 0xff}},
		{Key: offsetCommitKey("g", TopicPartition{"t", 0}), Value: []byte{0, 3}},
	} {
		if err := c.Apply(0, rec); err == nil {
			t.Errorf("record %v accepted", rec)
		}
	}
}

func TestApplyOldRecordVersions(t *testing.T) {
	c, _ := New(testConfig(), 1)
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.CommitTimestamp, v.ExpireTimestamp = 1, 42, 10, 500
	if err := c.Apply(0, Record{Key: offsetCommitKey("g", TopicPartition{"t", 0}), Value: v.AppendTo(nil)}); err != nil {
		t.Fatal(err)
	}
	got := c.FetchOffsets("g", []TopicPartition{{"t", 0}, {"t", 1}})
	if got[0].Offset != 42 || got[0].LeaderEpoch != -1 || got[1].Offset != -1 {
		t.Fatalf("fetched %+v", got)
	}
	// The explicit expiry of a v1 record wins over the retention rule.
	if out := c.ExpireOffsets(499); len(out.Records) != 0 {
		t.Fatalf("expired early: %+v", out)
	}
	if out := c.ExpireOffsets(500); len(out.Records) != 1 {
		t.Fatalf("not expired: %+v", out)
	}
}

func FuzzApply(f *testing.F) {
	f.Add(offsetCommitKey("g", TopicPartition{"t", 1}), offsetCommitRecord("g", TopicPartition{"t", 1}, offsetEntry{offset: 1}).Value)
	g := newGroup(nil, "g", 0)
	f.Add(groupMetadataKey("g"), groupMetadataRecord(g).Value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, _ := New(testConfig(), 1)
		_ = c.Apply(0, Record{Key: key, Value: value})
		c.Tick(1 << 40)
		c.ExpireOffsets(1 << 40)
		c.ListGroups(nil)
	})
}

func TestListGroupsFiltersByState(t *testing.T) {
	c, _ := New(testConfig(), 1)
	c.CommitOffsets(0, CommitRequest{GroupID: "offsets-only", Generation: -1, Offsets: []CommitOffset{{Topic: "t"}}})
	c.Join(0, JoinRequest{ID: 1, GroupID: "joining", SessionTimeoutMs: 10000, ProtocolType: "consumer",
		Protocols: []Protocol{{Name: "range"}}})
	all := c.ListGroups(nil)
	if len(all) != 2 || all[0].GroupID != "joining" || all[0].State != PreparingRebalance || all[1].State != Empty {
		t.Fatalf("ListGroups = %+v", all)
	}
	if only := c.ListGroups([]State{Empty}); len(only) != 1 || only[0].GroupID != "offsets-only" {
		t.Fatalf("ListGroups(Empty) = %+v", only)
	}
}

// TestRandomOperations drives the coordinator with random requests from a
// few clients and checks the invariants after every call, and that every
// request is answered exactly once (at the latest by Unload).
func TestRandomOperations(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 1))
		cfg := testConfig()
		cfg.MaxSize = 4
		c, _ := New(cfg, seed)
		answered := map[RequestID]int{}
		var sent []RequestID
		ids := map[int]string{}
		gens := map[int]int32{}
		var next RequestID
		now := int64(0)
		var inflight []AssignmentWrite
		take := func(out Output) {
			inflight = append(inflight, out.AssignmentWrites...)
			for _, j := range out.Joins {
				answered[j.To]++
			}
			for _, s := range out.Syncs {
				answered[s.To]++
			}
		}
		for range 400 {
			now += rng.Int64N(4000)
			who := rng.IntN(6)
			instance := ""
			if who >= 4 {
				instance = string(rune('A' + who))
			}
			switch rng.IntN(8) {
			case 0, 1:
				next++
				sent = append(sent, next)
				req := JoinRequest{ID: next, GroupID: "g", MemberID: ids[who], InstanceID: instance, SessionTimeoutMs: 10000,
					RebalanceTimeoutMs: 15000, ProtocolType: "consumer", RequireKnownMemberID: rng.IntN(2) == 0,
					Protocols: []Protocol{{Name: []string{"range", "rr"}[rng.IntN(2)], Metadata: subscription("t")}}}
				if rng.IntN(5) == 0 {
					req.MemberID = ""
				}
				out := c.Join(now, req)
				for _, j := range out.Joins {
					if j.To == next && j.Response.MemberID != "" {
						ids[who], gens[who] = j.Response.MemberID, j.Response.Generation
					}
				}
				take(out)
			case 2:
				next++
				sent = append(sent, next)
				take(c.Sync(now, SyncRequest{ID: next, GroupID: "g", MemberID: ids[who], InstanceID: instance, Generation: gens[who],
					Assignments: []Assignment{{MemberID: ids[who], Assignment: []byte("x")}}}))
			case 3:
				c.Heartbeat(now, HeartbeatRequest{GroupID: "g", MemberID: ids[who], InstanceID: instance, Generation: gens[who]})
			case 4:
				_, out := c.Leave(now, LeaveRequest{GroupID: "g", Members: []LeavingMember{{MemberID: ids[who]}}})
				take(out)
			case 5:
				_, out := c.CommitOffsets(now, CommitRequest{GroupID: "g", MemberID: ids[who], Generation: gens[who],
					Offsets: []CommitOffset{{Topic: "t", Offset: now}}})
				take(out)
			case 6:
				take(c.Tick(now))
			case 7: // an assignment write's outcome, possibly a stale one
				if len(inflight) == 0 {
					break
				}
				i := rng.IntN(len(inflight))
				w := inflight[i]
				inflight = append(inflight[:i], inflight[i+1:]...)
				var err error
				if rng.IntN(3) == 0 {
					err = kerr.NotEnoughReplicas
				}
				take(c.AssignmentWritten(now, w, err))
			}
			checkInvariants(t, c)
		}
		take(c.Unload())
		for _, id := range sent {
			if answered[id] != 1 {
				t.Fatalf("seed %d: request %d answered %d times", seed, id, answered[id])
			}
		}
	}
}

func checkInvariants(t *testing.T, c *Coordinator) {
	t.Helper()
	for id, g := range c.groups {
		awaiting, votes := 0, map[string]int{}
		for mid, m := range g.members {
			if m.id != mid {
				t.Fatalf("group %s: member %s stored under %s", id, m.id, mid)
			}
			if m.joinWaiting {
				awaiting++
			}
			if m.syncWaiting && g.state != CompletingRebalance {
				t.Fatalf("group %s: sync parked in state %s", id, g.state)
			}
			if m.joinWaiting && g.state != PreparingRebalance {
				t.Fatalf("group %s: join parked in state %s", id, g.state)
			}
			if m.instanceID != "" && g.static[m.instanceID] != mid {
				t.Fatalf("group %s: static map misses %s", id, mid)
			}
			seen := map[string]bool{}
			for _, p := range m.protocols {
				if !seen[p.Name] {
					seen[p.Name] = true
					votes[p.Name]++
				}
			}
		}
		if awaiting != g.awaiting {
			t.Fatalf("group %s: awaiting %d, counted %d", id, g.awaiting, awaiting)
		}
		if len(votes) != len(g.votes) {
			t.Fatalf("group %s: votes %v, counted %v", id, g.votes, votes)
		}
		for p, n := range votes {
			if g.votes[p] != n {
				t.Fatalf("group %s: votes %v, counted %v", id, g.votes, votes)
			}
		}
		if len(g.static) > len(g.members) {
			t.Fatalf("group %s: stale static entries %v", id, g.static)
		}
		if len(g.members) > 0 && g.members[g.leader] == nil {
			t.Fatalf("group %s: leader %q is not a member", id, g.leader)
		}
		// Without members, only a rebalance waiting for a handed-out id or
		// for the initial delay may remain open.
		if g.state == Empty && len(g.members) > 0 ||
			g.state != Empty && len(g.members) == 0 && !(g.state == PreparingRebalance && (len(g.pending) > 0 || g.initialDelay)) {
			t.Fatalf("group %s: state %s with %d members", id, g.state, len(g.members))
		}
		if p := g.assigning; p != nil && (g.state != CompletingRebalance || p.generation != g.generation) {
			t.Fatalf("group %s: assignment of generation %d in flight in %s of generation %d", id, p.generation, g.state, g.generation)
		}
		if len(g.members)+len(g.pending) > c.cfg.MaxSize {
			t.Fatalf("group %s: %d members and %d pending exceed the max size", id, len(g.members), len(g.pending))
		}
	}
	if len(c.timers.entries) > 2*len(c.groups)+64 {
		t.Fatalf("timer heap holds %d entries for %d groups", len(c.timers.entries), len(c.groups))
	}
}

func TestHeartbeatsKeepTheTimerHeapSmall(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelayMs = 0
	c, _ := New(cfg, 1)
	out := c.Join(0, JoinRequest{ID: 1, GroupID: "g", SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}})
	id := out.Joins[0].Response.MemberID
	out = c.Sync(0, SyncRequest{ID: 2, GroupID: "g", MemberID: id, Generation: 1})
	if len(out.AssignmentWrites) != 1 {
		t.Fatalf("sync: %+v", out)
	}
	out = c.AssignmentWritten(0, out.AssignmentWrites[0], nil)
	if out.IsZero() || out.Syncs[0].Response.Err != nil {
		t.Fatalf("sync: %+v", out)
	}
	for now := int64(1); now < 5000; now++ {
		if err := c.Heartbeat(now, HeartbeatRequest{GroupID: "g", MemberID: id, Generation: 1}); err != nil {
			t.Fatal(err)
		}
		if d, ok := c.NextDeadline(); !ok || d != now+10000 {
			t.Fatalf("next deadline %d, %v at %d", d, ok, now)
		}
	}
	if n := len(c.timers.entries); n > 2*len(c.groups)+64 {
		t.Fatalf("timer heap holds %d entries", n)
	}
	if out := c.Tick(5000); !out.IsZero() {
		t.Fatalf("tick before the deadline: %+v", out)
	}
}

func TestRequestsWithoutGroup(t *testing.T) {
	c, _ := New(testConfig(), 1)
	base := JoinRequest{ID: 1, SessionTimeoutMs: 10000, ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}}}
	out := c.Join(0, base)
	if err := out.Joins[0].Response.Err; err != kerr.InvalidGroupID {
		t.Errorf("join without group id: %v", err)
	}
	base.GroupID, base.MemberID = "g", "made-up"
	if err := c.Join(0, base).Joins[0].Response.Err; err != kerr.UnknownMemberID {
		t.Errorf("join of unknown group with a member id: %v", err)
	}
	if err := c.Sync(0, SyncRequest{ID: 2}).Syncs[0].Response.Err; err != kerr.InvalidGroupID {
		t.Errorf("sync without group id: %v", err)
	}
	if err := c.Sync(0, SyncRequest{ID: 2, GroupID: "g"}).Syncs[0].Response.Err; err != kerr.UnknownMemberID {
		t.Errorf("sync of unknown group: %v", err)
	}
	if err := c.Heartbeat(0, HeartbeatRequest{}); err != kerr.InvalidGroupID {
		t.Errorf("heartbeat without group id: %v", err)
	}
	if err := c.Heartbeat(0, HeartbeatRequest{GroupID: "g"}); err != kerr.UnknownMemberID {
		t.Errorf("heartbeat of unknown group: %v", err)
	}
	if resp, _ := c.Leave(0, LeaveRequest{}); resp.Err != kerr.InvalidGroupID {
		t.Errorf("leave without group id: %v", resp.Err)
	}
	if resp, _ := c.Leave(0, LeaveRequest{GroupID: "g", Members: []LeavingMember{{MemberID: "x"}}}); resp.Members[0] != kerr.UnknownMemberID {
		t.Errorf("leave of unknown group: %v", resp.Members[0])
	}
	if len(c.groups) != 0 {
		t.Errorf("failed requests left groups behind: %v", c.ListGroups(nil))
	}
}

// TestJoinChecksOrder: Kafka checks a join's group id, then its session
// timeout, and only then its protocols; no group is left behind by a join
// without protocols.
func TestJoinChecksOrder(t *testing.T) {
	c, _ := New(testConfig(), 1)
	for _, tc := range []struct {
		req  JoinRequest
		want error
	}{
		{JoinRequest{ID: 1}, kerr.InvalidGroupID},
		{JoinRequest{ID: 2, GroupID: "g"}, kerr.InvalidSessionTimeout},
		{JoinRequest{ID: 3, GroupID: "g", SessionTimeoutMs: 10000}, kerr.InconsistentGroupProtocol},
		{JoinRequest{ID: 4, GroupID: "g", SessionTimeoutMs: 10000, ProtocolType: "consumer"}, kerr.InconsistentGroupProtocol},
	} {
		if err := c.Join(0, tc.req).Joins[0].Response.Err; err != tc.want {
			t.Errorf("join %+v: %v, want %v", tc.req, err, tc.want)
		}
	}
	if len(c.groups) != 0 {
		t.Errorf("joins that failed left %d groups", len(c.groups))
	}
}
