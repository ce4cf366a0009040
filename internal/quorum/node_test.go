package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/testport"
	"github.com/skein-log/skein/internal/vfs"
	"go.etcd.io/raft/v3/raftpb"
)

// testDeadline bounds every wait; a healthy run takes a fraction of it.
const testDeadline = 15 * time.Second

// tcpNode is one controller of a tcpCluster.
type tcpNode struct {
	id        int32
	clusterID string
	dir       string
	server    *Server
	node      *Node
	mu        sync.Mutex
	applied   []string // "index:data", this process lifetime
	stepped   atomic.Int64
	rejected  atomic.Int64
}

func (n *tcpNode) appliedCopy() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.applied)
}

// tcpCluster runs real Nodes over TCP on 127.0.0.1.
type tcpCluster struct {
	t      *testing.T
	voters []config.Voter
	nodes  map[int32]*tcpNode
	events chan struct{} // poked on every apply, leader change and rejection
	// electionTicks gives node id's ElectionTicks (nil: 10 for all).
	electionTicks func(id int32) int
}

func newTCPCluster(t *testing.T, clusterIDs ...string) *tcpCluster {
	t.Helper()
	return newTCPClusterTicks(t, nil, clusterIDs...)
}

// newTCPClusterTicks is newTCPCluster with each node's ElectionTicks
// given by electionTicks.
func newTCPClusterTicks(t *testing.T, electionTicks func(id int32) int, clusterIDs ...string) *tcpCluster {
	t.Helper()
	c := &tcpCluster{t: t, nodes: map[int32]*tcpNode{}, events: make(chan struct{}, 1), electionTicks: electionTicks}
	lns := map[int32]net.Listener{}
	for i := range clusterIDs {
		// A reserved port, not port 0: a restarted node listens on its
		// address again, and an ephemeral port may meanwhile have become
		// the source port of another connection (the others keep
		// redialing this very address), see internal/testport.
		port := testport.One(t)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		id := int32(i)
		lns[id] = ln
		c.voters = append(c.voters, config.Voter{ID: id, Host: "127.0.0.1", Port: port})
	}
	base := t.TempDir()
	for i, cid := range clusterIDs {
		id := int32(i)
		c.nodes[id] = &tcpNode{id: id, clusterID: cid, dir: filepath.Join(base, fmt.Sprintf("node-%d", id))}
		c.start(id, lns[id])
	}
	t.Cleanup(func() {
		for id, n := range c.nodes {
			if n.node != nil {
				c.stop(id)
			}
		}
	})
	return c
}

func (c *tcpCluster) poke() {
	select {
	case c.events <- struct{}{}:
	default:
	}
}

// start runs node id (again) on ln, or on a new listener at its address.
func (c *tcpCluster) start(id int32, ln net.Listener) {
	c.t.Helper()
	n := c.nodes[id]
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.voters[id].Addr()); err != nil {
			c.t.Fatalf("relisten node %d: %v", id, err)
		}
	}
	n.mu.Lock()
	n.applied = nil
	n.mu.Unlock()
	transport, err := NewTCPTransport(TCPTransportConfig{ClusterID: n.clusterID, Self: RaftID(id), Peers: c.voters,
		MaxBackoff: 100 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		c.t.Fatal(err)
	}
	electionTicks := 10
	if c.electionTicks != nil {
		electionTicks = c.electionTicks(id)
	}
	node, err := StartNode(NodeConfig{
		NodeID: id, ClusterID: n.clusterID, Voters: c.voters,
		Dir: n.dir, FS: vfs.OS{},
		TickInterval: 10 * time.Millisecond, ElectionTicks: electionTicks, HeartbeatTicks: 1,
		Snapshotter: &machine{},
		Apply: func(index uint64, data []byte) {
			n.mu.Lock()
			n.applied = append(n.applied, fmt.Sprintf("%d:%s", index, data))
			n.mu.Unlock()
			c.poke()
		},
		OnLeaderChange: func(int32) { c.poke() },
		Transport:      transport,
		Logger:         quietLogger(),
	})
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	n.node = node
	n.server = NewServer(ln, ServerConfig{
		ClusterID: n.clusterID,
		Step: func(m *raftpb.Message) error {
			n.stepped.Add(1)
			return node.Step(m)
		},
		OnReject: func(error) { n.rejected.Add(1); c.poke() },
		Logger:   quietLogger(),
	})
	go func() { _ = n.server.Serve() }()
}

// stop ends node id's process as a kill would: its port refuses at once
// and its quorum stops without handing anything over (Halt).
func (c *tcpCluster) stop(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	if err := n.server.Close(); err != nil {
		c.t.Errorf("close server %d: %v", id, err)
	}
	if err := n.node.Halt(); err != nil {
		c.t.Errorf("halt node %d: %v", id, err)
	}
	n.node = nil
}

// waitUntil re-checks cond after every event until it holds.
func (c *tcpCluster) waitUntil(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.NewTimer(testDeadline)
	defer deadline.Stop()
	// Every condition waited on changes only with an apply, a leader
	// change or a rejection, and each of those pokes events after the
	// change is visible.
	for !cond() {
		select {
		case <-c.events:
		case <-deadline.C:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// leader returns the one running node that leads and that every running
// node of the same cluster id follows, or -1.
func (c *tcpCluster) leader(among ...int32) int32 {
	leader := int32(-1)
	for _, id := range among {
		n := c.nodes[id]
		if n.node == nil {
			continue
		}
		if n.node.IsLeader() {
			if leader >= 0 {
				return -1
			}
			leader = id
		}
	}
	for _, id := range among {
		if n := c.nodes[id]; n.node != nil && n.node.Leader() != leader {
			return -1
		}
	}
	return leader
}

func (c *tcpCluster) waitLeader(among ...int32) int32 {
	c.t.Helper()
	c.waitUntil(fmt.Sprintf("one leader among %v", among), func() bool { return c.leader(among...) >= 0 })
	return c.leader(among...)
}

// propose proposes on whoever leads, following NotLeader hints and retrying
// dropped proposals, and checks the proposer applied it before returning.
func (c *tcpCluster) propose(value string, among ...int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	for {
		leader := c.waitLeader(among...)
		n := c.nodes[leader]
		err := n.node.Propose(ctx, []byte(value))
		if err == nil {
			if !hasValue(n.appliedCopy(), value) {
				c.t.Fatalf("Propose(%q) returned before node %d applied it", value, leader)
			}
			return
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrProposalDropped) {
			c.t.Fatalf("propose %q on %d: %v", value, leader, err)
		}
	}
}

func hasValue(applied []string, value string) bool {
	return slices.ContainsFunc(applied, func(s string) bool {
		_, v, _ := cutIndex(s)
		return v == value
	})
}

func cutIndex(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// waitSameApplied waits until every listed node applied exactly want.
func (c *tcpCluster) waitSameApplied(want int, ids ...int32) []string {
	c.t.Helper()
	c.waitUntil(fmt.Sprintf("nodes %v to apply %d entries", ids, want), func() bool {
		for _, id := range ids {
			if len(c.nodes[id].appliedCopy()) < want {
				return false
			}
		}
		return true
	})
	first := c.nodes[ids[0]].appliedCopy()
	for _, id := range ids[1:] {
		if got := c.nodes[id].appliedCopy(); !slices.Equal(got, first) {
			c.t.Fatalf("node %d applied %v, node %d applied %v", id, got, ids[0], first)
		}
	}
	if len(first) != want {
		c.t.Fatalf("applied %d entries, want %d: %v", len(first), want, first)
	}
	return first
}

func TestNodeOverTCP(t *testing.T) {
	c := newTCPCluster(t, testClusterID, testClusterID, testClusterID)
	all := []int32{0, 1, 2}
	for i := range 10 {
		c.propose(fmt.Sprintf("a%d", i), all...)
	}
	c.waitSameApplied(10, all...)

	// A follower refuses a proposal and names the leader. On a loaded
	// machine a missed heartbeat can move the leadership between looking
	// it up and proposing; then look again (a proposal the follower took
	// as the new leader is one more entry).
	old, applied := int32(-1), 10
	for attempt := 0; old < 0; attempt++ {
		if attempt == 10 {
			t.Fatal("the leadership kept moving: no follower refusal seen in 10 attempts")
		}
		leader := c.waitLeader(all...)
		follower := (leader + 1) % 3
		err := c.nodes[follower].node.Propose(context.Background(), []byte("x"))
		var nle *NotLeaderError
		switch {
		case err == nil:
			applied++
		case errors.As(err, &nle) && nle.LeaderNode() == leader:
			old = leader
		case errors.Is(err, ErrNotLeader) || errors.Is(err, ErrProposalDropped):
			t.Logf("propose on follower %d during a leadership change: %v", follower, err)
		default:
			t.Fatalf("propose on follower %d: %v, want NotLeaderError naming %d", follower, err, leader)
		}
	}

	// The leader stops: the others elect a new one and carry on.
	c.stop(old)
	var rest []int32
	for _, id := range all {
		if id != old {
			rest = append(rest, id)
		}
	}
	if fresh := c.waitLeader(rest...); fresh == old {
		t.Fatalf("stopped node %d still leads", old)
	}
	for i := range 10 {
		c.propose(fmt.Sprintf("b%d", i), rest...)
	}
	want := c.waitSameApplied(applied+10, rest...)

	// The stopped node restarts, replays its own log and catches up.
	c.start(old, nil)
	got := c.waitSameApplied(applied+10, all...)
	if !slices.Equal(got, want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	c.propose("c", all...)
	c.waitSameApplied(applied+11, all...)
}

func TestNodeRejectsOtherCluster(t *testing.T) {
	c := newTCPCluster(t, testClusterID, testClusterID, "another-cluster")
	pair := []int32{0, 1}
	c.waitLeader(pair...)
	for i := range 3 {
		c.propose(fmt.Sprintf("v%d", i), pair...)
	}
	c.waitSameApplied(3, pair...)
	stranger := c.nodes[2]
	// The leader's heartbeats reach the stranger's listener and are refused.
	c.waitUntil("the stranger to refuse a frame", func() bool { return stranger.rejected.Load() > 0 })
	if n := stranger.stepped.Load(); n != 0 {
		t.Fatalf("stranger accepted %d messages", n)
	}
	if got := stranger.appliedCopy(); len(got) != 0 || stranger.node.Leader() != -1 {
		t.Fatalf("stranger applied %v, follows %d", got, stranger.node.Leader())
	}
}

// newNode0LeadsCluster is three nodes of which only node 0 ever times out
// an election (the others' timeout is 10,000 s): node 0 leads, and every
// node applied one entry ("a").
func newNode0LeadsCluster(t *testing.T) *tcpCluster {
	t.Helper()
	c := newTCPClusterTicks(t, func(id int32) int {
		if id == 0 {
			return 10 // node 0 is elected first, the usual way
		}
		return 1_000_000
	}, testClusterID, testClusterID, testClusterID)
	all := []int32{0, 1, 2}
	if leader := c.waitLeader(all...); leader != 0 {
		t.Fatalf("node %d leads, want node 0 (the others never time out)", leader)
	}
	c.propose("a", all...)
	c.waitSameApplied(1, all...)
	return c
}

// TestDeadLeaderReplacedAtOnce: when the leader's process is gone (its
// connections closed, its port refusing), the followers forget it and one
// of them campaigns, without waiting out an election timeout. Here the
// followers' timeout is 10,000 s: only that path can elect a new leader.
func TestDeadLeaderReplacedAtOnce(t *testing.T) {
	c := newNode0LeadsCluster(t)
	c.stop(0)
	if leader := c.waitLeader(1, 2); leader != 1 {
		t.Fatalf("node %d leads, want node 1 (the lowest id left campaigns)", leader)
	}
	c.propose("b", 1, 2)
	c.waitSameApplied(2, 1, 2)
}

// TestStoppedLeaderHandsOver: a leader stopped cleanly (Stop) hands its
// leadership over before it stops, while its port still accepts
// connections, so nothing tells the followers it is gone (PeerDown) and
// their election timeout is 10,000 s: only the handover can elect a new
// leader. Stop returns once the old leader knows its successor, which the
// survivors follow.
func TestStoppedLeaderHandsOver(t *testing.T) {
	c := newNode0LeadsCluster(t)
	old := c.nodes[0]
	term := old.node.Term()
	if err := old.node.Stop(); err != nil {
		t.Fatalf("stop node 0: %v", err)
	}
	next := old.node.Leader()
	if next != 1 && next != 2 {
		t.Fatalf("node 0 stopped knowing leader %d, want its successor 1 or 2", next)
	}
	if old.node.IsLeader() {
		t.Fatal("node 0 stopped as the leader")
	}
	if leader := c.waitLeader(1, 2); leader != next {
		t.Fatalf("node %d leads, want %d (node 0's successor)", leader, next)
	}
	if got := c.nodes[next].node.Term(); got != term+1 {
		t.Fatalf("successor in term %d, want %d (one election)", got, term+1)
	}
	if err := old.server.Close(); err != nil {
		t.Fatal(err)
	}
	old.node = nil
	c.propose("b", 1, 2)
	c.waitSameApplied(2, 1, 2)
}
