package quorum

import (
	"fmt"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/testport"
)

// downReporter records ReportDown; the other outcomes do not matter here.
type downReporter struct{ down chan uint64 }

func (r *downReporter) ReportUnreachable(uint64)    {}
func (r *downReporter) ReportSnapshot(uint64, bool) {}
func (r *downReporter) ReportDown(id uint64)        { r.down <- id }

// TestTransportRedialsARestartedPeer: a peer that restarts closes the
// transport's connection to it. The transport notices (and, while nothing
// listens, reports the peer down), so the first message after the restart
// goes out on a new connection rather than into the dead one, where the
// write would succeed and the message vanish (a pre-vote lost that way
// cost a controller failover a whole election timeout).
func TestTransportRedialsARestartedPeer(t *testing.T) {
	port := testport.One(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	got := make(chan uint64, 16)
	serve := func() *Server {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s := NewServer(ln, ServerConfig{ClusterID: testClusterID, Logger: quietLogger(),
			Step: func(m *raftpb.Message) error { got <- m.GetIndex(); return nil }})
		go func() { _ = s.Serve() }()
		return s
	}
	server := serve()
	tr, err := NewTCPTransport(TCPTransportConfig{ClusterID: testClusterID, Self: RaftID(1),
		Peers:  []config.Voter{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: port}},
		Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rep := &downReporter{down: make(chan uint64, 4)}
	if err := tr.Start(rep); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	send := func(index uint64) {
		tr.Send([]*raftpb.Message{{Type: raftpb.MsgHeartbeat.Enum(), To: new(RaftID(2)), From: new(RaftID(1)), Index: new(index)}})
	}
	wait := func(what string, ch chan uint64, want uint64) {
		t.Helper()
		deadline := time.NewTimer(testDeadline)
		defer deadline.Stop()
		select {
		case v := <-ch:
			if v != want {
				t.Fatalf("%s: got %d, want %d", what, v, want)
			}
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	send(1)
	wait("the first message", got, 1)
	server.Close()
	wait("the peer reported down", rep.down, RaftID(2))
	server = serve()
	defer server.Close()
	send(2)
	wait("the message sent after the restart", got, 2)
}

// TestTransportReportsRefusedPeerDown: a message to a peer whose port
// refuses connections reports the peer down, not only unreachable, on
// every try. A follower that forgot its dead leader and then followed it
// again (a heartbeat the leader sent before dying, read late) hears of the
// death again only this way: its answer's dial is refused.
func TestTransportReportsRefusedPeerDown(t *testing.T) {
	port := testport.One(t) // reserved, nothing listens there
	tr, err := NewTCPTransport(TCPTransportConfig{ClusterID: testClusterID, Self: RaftID(1),
		Peers:      []config.Voter{{ID: 1, Host: "127.0.0.1", Port: 1}, {ID: 2, Host: "127.0.0.1", Port: port}},
		MinBackoff: time.Hour, MaxBackoff: time.Hour, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rep := &downReporter{down: make(chan uint64, 4)}
	if err := tr.Start(rep); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for i := range 2 { // the second while backing off: no dial, still down
		tr.Send([]*raftpb.Message{{Type: raftpb.MsgHeartbeatResp.Enum(), To: new(RaftID(2)), From: new(RaftID(1))}})
		deadline := time.NewTimer(testDeadline)
		select {
		case id := <-rep.down:
			if id != RaftID(2) {
				t.Fatalf("message %d: reported %d down, want %d", i, id, RaftID(2))
			}
		case <-deadline.C:
			t.Fatalf("message %d: the refused peer was not reported down", i)
		}
		deadline.Stop()
	}
}
