package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
	"github.com/skein-log/skein/internal/vfs"
)

// TestClusterNewTopicLeaderServesFirstRequest: a topic is created and a
// client sends its first Produce straight to the leader that another
// broker's answer named, as kafka-go's Conn does (DialLeader asks one
// broker, then writes to the leader, with no retry). The leader has not
// caught up with the creation yet, held at the two places a real leader
// lags:
//
//   - its metadata quorum member has the entry but has not applied the
//     commit (its filesystem holds the quorum's HardState write): before
//     the fix it answered UNKNOWN_TOPIC_OR_PARTITION from an image without
//     the topic;
//   - its image has the topic but the reconcile loop has not opened the
//     partition (its filesystem holds the partition's first file): before
//     the fix it answered NOT_LEADER_OR_FOLLOWER.
//
// The leader must hold the request (a Produce, or kafka-go's ListOffsets
// for the last offset) until it has caught up (the test releases the
// filesystem once the broker reports the request waiting) and then serve it.
func TestClusterNewTopicLeaderServesFirstRequest(t *testing.T) {
	c := newRolesCluster(t, testcluster.Combine(3), nil, node.Options{})
	gates := make([]*newTopicGate, 3)
	for i := range gates {
		gates[i] = &newTopicGate{FS: vfs.OS{}}
		t.Cleanup(gates[i].release)
		c.startOn(i, gates[i])
	}
	c.waitRegistered()
	haltAllAtEnd(t, c)
	ctx := testContext(t, time.Minute)
	ctrl := awaitActiveController(ctx, t, c, func(int32) bool { return true })
	others := otherBrokers(3, ctrl)
	leader, third := others[0], others[1]
	// The client asks the controller, which applies a creation first.
	asked := c.addrs()[ctrl-1]
	admin := newSeededClient(t, []string{asked})

	holdHardState := func(g *newTopicGate, _ string) { g.holdHardState() }
	holdOpen := func(g *newTopicGate, topic string) { g.holdOpen(topic) }
	produce := func(conn *kafka.Conn) error {
		_, err := conn.WriteMessages(kafka.Message{Value: []byte("first")})
		return err
	}
	listOffsets := func(conn *kafka.Conn) error {
		_, err := conn.ReadLastOffset()
		return err
	}
	for _, tc := range []struct {
		name  string
		topic string
		hold  func(g *newTopicGate, topic string)
		first func(conn *kafka.Conn) error
	}{
		{"quorum member behind, produce", "new-topic-unapplied", holdHardState, produce},
		{"partition not open, produce", "new-topic-unopened", holdOpen, produce},
		{"quorum member behind, list offsets", "new-topic-unapplied-lo", holdHardState, listOffsets},
		{"partition not open, list offsets", "new-topic-unopened-lo", holdOpen, listOffsets},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gates[leader-1]
			tc.hold(g, tc.topic)
			reached := g.reached
			createAssignedTopic(ctx, t, admin, tc.topic, [][]int32{{leader, ctrl, third}})
			// The leader is now held where the case says: with the
			// commit unapplied, or with the topic in its image and the
			// partition being opened.
			select {
			case <-reached:
			case <-ctx.Done():
				t.Fatalf("the leader never reached the held file: %v", ctx.Err())
			}

			conn, err := kafka.DialLeader(ctx, "tcp", asked, tc.topic, 0)
			if err != nil {
				t.Fatalf("kafka-go DialLeader via broker %d: %v", ctrl, err)
			}
			defer conn.Close()
			if got := conn.Broker().ID; got != int(leader) {
				t.Fatalf("DialLeader connected to broker %d, want the assigned leader %d", got, leader)
			}
			if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			written := make(chan error, 1)
			go func() { written <- tc.first(conn) }()
			waiting := awaitMetadataWait(ctx, c.brokers[leader-1], written)
			g.release()
			err = <-written
			if !waiting {
				t.Fatalf("the leader answered before catching up with the topic's creation: %v", err)
			}
			if err != nil {
				t.Fatalf("first request to the new topic's leader %d: %v", leader, err)
			}
		})
	}
}

// awaitMetadataWait returns true once b holds a request for its metadata
// to catch up, or false if answered delivers first (it is put back).
func awaitMetadataWait(ctx context.Context, b *node.Broker, answered chan error) bool {
	for {
		n, changed := b.MetadataWaits()
		if n > 0 {
			return true
		}
		select {
		case <-changed:
		case err := <-answered:
			answered <- err
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// newTopicGate is a node's filesystem that can hold, until released, the
// metadata quorum's HardState writes (its member then applies no new
// commit) or the first file the reconcile loop opens of a topic's
// partition.
type newTopicGate struct {
	vfs.FS
	mu        sync.Mutex
	hardState bool
	topic     string
	held      chan struct{} // closed by release
	reached   chan struct{} // closed when a held file is first opened
}

func (g *newTopicGate) holdHardState() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hardState, g.held, g.reached = true, make(chan struct{}), make(chan struct{})
}

func (g *newTopicGate) holdOpen(topic string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.topic, g.held, g.reached = topic, make(chan struct{}), make(chan struct{})
}

func (g *newTopicGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
	}
	g.hardState, g.topic, g.held, g.reached = false, "", nil, nil
}

func (g *newTopicGate) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	base, dir := filepath.Base(name), filepath.Base(filepath.Dir(name))
	g.mu.Lock()
	held := g.held
	hold := held != nil && ((g.hardState && base == "hardstate.tmp") ||
		(g.topic != "" && base == partitionMetadataFile && strings.HasPrefix(dir, g.topic+"-")))
	if hold && g.reached != nil {
		close(g.reached)
		g.reached = nil
	}
	g.mu.Unlock()
	if hold {
		<-held
	}
	return g.FS.OpenFile(name, flag, perm)
}

// partitionMetadataFile is the first file a broker writes of a partition
// it opens (node's partition.metadata).
const partitionMetadataFile = "partition.metadata"
