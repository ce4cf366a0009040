package quorum

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

// machine is a test state machine: the list of applied values. Safe for
// concurrent reads (the Node applies on its own goroutine).
type machine struct {
	mu       sync.Mutex
	values   []string
	restores int
	// restoredAt is the index the last Restore was given.
	restoredAt uint64
}

func (m *machine) apply(data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values = append(m.values, string(data))
}

func (m *machine) Snapshot() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return json.Marshal(m.values)
}

func (m *machine) Restore(index uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restores++
	m.restoredAt = index
	m.values = nil
	return json.Unmarshal(data, &m.values)
}

func (m *machine) snapshotValues() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.values)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const testClusterID = "test-cluster-id"

// cluster drives Cores in one goroutine over an in-memory bus. Messages go
// through the real frame codec, so no memory is shared between nodes.
type cluster struct {
	t       *testing.T
	ids     []uint64
	fs      map[uint64]*vfs.Mem
	cores   map[uint64]*Core
	sms     map[uint64]*machine
	cfg     CoreConfig // template: ID, FS and Snapshotter are filled per node
	cut     map[[2]uint64]bool
	queue   []*raftpb.Message
	applied map[uint64][]Entry // every entry each node was handed, in order
	// dynamic: the nodes run a dynamic quorum that node 1 founds; changes
	// collects the membership results leaders reported.
	dynamic bool
	changes []ChangeResult
	refused int
	self    map[uint64]Member // a node's own record when not testMember's (a new disk, a new port)
	// updates are the UpdateRaftVoter requests voters asked to send.
	updates []VoterUpdate
}

func newCluster(t *testing.T, n int, tmpl CoreConfig) *cluster {
	t.Helper()
	return startCluster(t, n, tmpl, false)
}

// startCluster starts n nodes, of a dynamic quorum that node 1 founds
// (the others start empty and wait to be added) or of a static one.
func startCluster(t *testing.T, n int, tmpl CoreConfig, dynamic bool) *cluster {
	t.Helper()
	c := &cluster{t: t, fs: map[uint64]*vfs.Mem{}, cores: map[uint64]*Core{}, sms: map[uint64]*machine{},
		cut: map[[2]uint64]bool{}, applied: map[uint64][]Entry{}, cfg: tmpl, dynamic: dynamic, self: map[uint64]Member{}}
	for i := 1; i <= n; i++ {
		c.ids = append(c.ids, uint64(i))
	}
	for _, id := range c.ids {
		c.fs[id] = vfs.NewMem()
		c.start(id)
	}
	t.Cleanup(func() {
		for _, core := range c.cores {
			_ = core.Close()
		}
	})
	return c
}

// start (re)opens node id from its disk with a fresh state machine.
func (c *cluster) start(id uint64) {
	c.t.Helper()
	cfg := c.cfg
	cfg.ID, cfg.Voters, cfg.FS, cfg.Dir = id, c.ids, c.fs[id], "quorum"
	if cfg.UpdateSelf {
		cfg.Self = testMember(id) // a static voter sends its record too
	}
	if c.dynamic {
		cfg.Voters, cfg.Dynamic, cfg.Self, cfg.Standalone = nil, true, testMember(id), id == 1
		if m, ok := c.self[id]; ok {
			cfg.Self = m
		}
	}
	cfg.Logger = quietLogger()
	sm := &machine{}
	cfg.Snapshotter = sm
	core, err := NewCore(cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	c.cores[id], c.sms[id] = core, sm
	c.applied[id] = nil
}

// crash kills node id: its disk keeps only what was synced.
func (c *cluster) crash(id uint64) {
	delete(c.cores, id)
	c.fs[id].Crash(vfs.CrashOptions{})
}

// isolate cuts node id off from everyone (both directions); heal undoes it.
func (c *cluster) isolate(id uint64) {
	for _, o := range c.ids {
		c.cut[[2]uint64{id, o}], c.cut[[2]uint64{o, id}] = true, true
	}
}

func (c *cluster) heal() { c.cut = map[[2]uint64]bool{} }

// settle runs Ready on every live node and delivers messages until nothing
// is left to do.
func (c *cluster) settle() {
	c.t.Helper()
	for range 10_000 {
		busy := false
		for _, id := range c.ids {
			core := c.cores[id]
			if core == nil {
				continue
			}
			out, err := core.Ready()
			if err != nil {
				c.t.Fatalf("node %d ready: %v", id, err)
			}
			for _, e := range out.Committed {
				c.applied[id] = append(c.applied[id], e)
				if len(e.Data) > 0 {
					c.sms[id].apply(e.Data)
				}
			}
			c.changes = append(c.changes, out.Changes...)
			if out.SelfUpdate != nil {
				c.updates = append(c.updates, *out.SelfUpdate)
			}
			if len(out.Messages) > 0 || len(out.Committed) > 0 || out.SoftState != nil || out.Membership != nil {
				busy = true
			}
			c.queue = append(c.queue, out.Messages...)
			if core.HasReady() {
				busy = true // e.g. a lone voter's entry, committed by its own append
			}
		}
		queue := c.queue
		c.queue = nil
		for _, m := range queue {
			c.deliver(m)
		}
		if !busy && len(queue) == 0 {
			return
		}
	}
	c.t.Fatal("cluster did not settle")
}

// deliver encodes m as a frame and steps the decoded copy into its target.
func (c *cluster) deliver(m *raftpb.Message) {
	c.t.Helper()
	from, to := m.GetFrom(), m.GetTo()
	target := c.cores[to]
	if target == nil || c.cut[[2]uint64{from, to}] {
		if m.GetType() == raftpb.MsgSnap && c.cores[from] != nil {
			c.cores[from].ReportSnapshot(to, false)
		}
		return
	}
	frame, err := AppendRaftFrame(nil, testClusterID, m)
	if err != nil {
		c.t.Fatalf("encode: %v", err)
	}
	err = HandleRaftFrame(frame[4:], testClusterID, target.Step)
	if err != nil && c.dynamic {
		// Refusals are part of membership changes (a replaced disk's
		// node refuses heartbeats for entries it lost).
		c.refused++
		return
	}
	if err != nil {
		c.t.Fatalf("deliver %s %d->%d: %v", m.GetType(), from, to, err)
	}
	if m.GetType() == raftpb.MsgSnap {
		c.cores[from].ReportSnapshot(to, true)
	}
}

// tick advances every live node's clock n times, settling after each.
func (c *cluster) tick(n int) {
	for range n {
		for _, id := range c.ids {
			if core := c.cores[id]; core != nil {
				core.Tick()
			}
		}
		c.settle()
	}
}

// leader returns the single leader among the live, connected nodes, failing
// the test if there is none or more than one within maxTicks.
func (c *cluster) waitLeader(maxTicks int, among ...uint64) uint64 {
	c.t.Helper()
	if len(among) == 0 {
		among = c.ids
	}
	for range maxTicks {
		var leaders []uint64
		for _, id := range among {
			if core := c.cores[id]; core != nil && core.IsLeader() {
				leaders = append(leaders, id)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		if len(leaders) > 1 {
			c.t.Fatalf("several leaders among %v: %v", among, leaders)
		}
		c.tick(1)
	}
	c.t.Fatalf("no leader among %v after %d ticks", among, maxTicks)
	return 0
}

// propose proposes on the leader and settles.
func (c *cluster) propose(leader uint64, values ...string) {
	c.t.Helper()
	for _, v := range values {
		if err := c.cores[leader].Propose([]byte(v)); err != nil {
			c.t.Fatalf("propose %q on %d: %v", v, leader, err)
		}
	}
	c.settle()
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// newDynamicCluster is n nodes of a dynamic quorum that node 1 founds.
func newDynamicCluster(t *testing.T, n int, tmpl CoreConfig) *cluster {
	t.Helper()
	return startCluster(t, n, tmpl, true)
}

// testMember is raft id's member record.
func testMember(id uint64) Member {
	return Member{NodeID: NodeID(id), DirectoryID: [16]byte{byte(id), 0xd1},
		Listeners: []Listener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(9000 + id)}}}
}
