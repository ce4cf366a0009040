package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestNewTopicLeaderServesAtOnce: kafka-go's DialLeader auto-creates a
// topic through one broker's Metadata answer and connects to the leader
// it names, and its Conn does not retry: the leader must serve the first
// Produce and Fetch even while it is still opening the partition's log,
// rather than answer NOT_LEADER_OR_FOLLOWER (which it did for about half
// of new topics, failing most of kafka-go's TestConn and TestReader).
func TestNewTopicLeaderServesAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startCluster(t, 3, map[string]string{"auto.create.topics.enable": "true"})
	haltAllAtEnd(t, c)
	awaitActiveController(ctx, t, c, func(int32) bool { return true })
	for i := range 12 {
		topic := fmt.Sprintf("new-topic-%d", i)
		conn, err := kafka.DialLeader(ctx, "tcp", c.addrs()[i%3], topic, 0)
		if err != nil {
			t.Fatalf("%s: DialLeader: %v", topic, err)
		}
		if i%2 == 0 {
			// The first request a Fetch: an empty partition times out
			// at the deadline rather than failing.
			conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := conn.ReadMessage(1 << 10); err == nil || !isTimeout(err) {
				conn.Close()
				t.Fatalf("%s: first Fetch from the leader: %v, want a timeout", topic, err)
			}
		}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.WriteMessages(kafka.Message{Value: []byte("first")}); err != nil {
			conn.Close()
			t.Fatalf("%s: first Produce to the leader: %v", topic, err)
		}
		conn.Close()
	}
}

func isTimeout(err error) bool {
	te, ok := err.(interface{ Timeout() bool })
	return ok && te.Timeout()
}
