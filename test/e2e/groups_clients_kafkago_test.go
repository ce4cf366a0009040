package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaGoGroupMember is a kafka-go Reader with a GroupID (range balancer).
// The Reader does not tell which partitions it was given, so its
// assignment is read from the coordinator: DescribeGroups, matched by the
// member's client id, while the group is Stable.
type kafkaGoGroupMember struct {
	t        *testing.T
	clientID string
	group    string
	adm      *kadm.Client
	r        *kafka.Reader
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func joinKafkaGoGroup(ctx context.Context, t *testing.T, tb *testBroker, group, topic, name string, onRecord recordFunc) clientGroupMember {
	t.Helper()
	m := &kafkaGoGroupMember{t: t, clientID: "kafka-go-" + name, group: group, adm: kadm.NewClient(tb.client()), done: make(chan struct{})}
	m.r = kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{tb.addr},
		GroupID:           group,
		Topic:             topic,
		Dialer:            &kafka.Dialer{ClientID: m.clientID, Timeout: 5 * time.Second},
		GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		SessionTimeout:    clientGroupSession,
		HeartbeatInterval: clientGroupHeartbeat,
		RebalanceTimeout:  clientGroupSession,
		JoinGroupBackoff:  clientGroupRejoin,
		StartOffset:       kafka.FirstOffset,
		CommitInterval:    0, // CommitMessages commits synchronously
		MaxWait:           clientGroupHeartbeat,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    clientGroupHeartbeat,
	})
	runCtx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	// The Reader joins the group when it is created; reading keeps its
	// partition readers from blocking on a full queue.
	go func() {
		defer close(m.done)
		for {
			msg, err := m.r.FetchMessage(runCtx)
			if err != nil {
				return // the context ended or the Reader was closed
			}
			if onRecord != nil && onRecord(int32(msg.Partition), msg.Offset) {
				if err := m.r.CommitMessages(runCtx, msg); err != nil && runCtx.Err() == nil {
					t.Errorf("kafka-go member %s: commit %d/%d: %v", name, msg.Partition, msg.Offset, err)
				}
			}
		}
	}()
	t.Cleanup(m.leave)
	return m
}

// leave stops reading and closes the Reader, which sends LeaveGroup.
func (m *kafkaGoGroupMember) leave() {
	m.stopOnce.Do(func() {
		m.cancel()
		<-m.done
		if err := m.r.Close(); err != nil {
			m.t.Errorf("close kafka-go reader %s: %v", m.clientID, err)
		}
	})
}

// owned is the member's assignment in the coordinator's Stable group; nil
// while the group rebalances or the member is not in it.
func (m *kafkaGoGroupMember) owned() []int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := m.adm.DescribeGroups(ctx, m.group)
	if err != nil {
		return nil
	}
	g := described[m.group]
	if g.Err != nil || g.State != "Stable" {
		return nil
	}
	var parts []int32
	for _, member := range g.Members {
		if member.ClientID != m.clientID {
			continue
		}
		if a, ok := member.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				parts = append(parts, tp.Partitions...)
			}
		}
	}
	slices.Sort(parts)
	return parts
}

// TestGroupKafkaGoShareAndRebalance: kafka-go Readers in one group split,
// take over and share a 6-partition topic.
func TestGroupKafkaGoShareAndRebalance(t *testing.T) {
	testGroupShareAndRebalance(t, joinKafkaGoGroup)
}

// TestGroupKafkaGoCommitAndResume: a kafka-go Reader's committed offsets
// are where the next Reader of the group resumes.
func TestGroupKafkaGoCommitAndResume(t *testing.T) {
	testGroupCommitAndResume(t, joinKafkaGoGroup)
}
