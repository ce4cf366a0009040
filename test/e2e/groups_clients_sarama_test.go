package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// saramaGroupMember is a sarama ConsumerGroup member with the range
// balancer (sarama's default, set explicitly). Its assignment is what
// sarama's session claims say.
type saramaGroupMember struct {
	ownership
	t        *testing.T
	topic    string
	onRecord recordFunc
	cg       sarama.ConsumerGroup
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func joinSaramaGroup(ctx context.Context, t *testing.T, tb *testBroker, group, topic, name string, onRecord recordFunc) clientGroupMember {
	t.Helper()
	cfg := saramaConfig()
	cfg.ClientID = "sarama-" + name
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = clientGroupSession
	cfg.Consumer.Group.Heartbeat.Interval = clientGroupHeartbeat
	cfg.Consumer.Group.Rebalance.Retry.Backoff = clientGroupRejoin
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false // commits are explicit and synchronous
	cfg.Consumer.MaxWaitTime = clientGroupHeartbeat
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{tb.addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group %s: %v", name, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	m := &saramaGroupMember{t: t, topic: topic, onRecord: onRecord, cg: cg, cancel: cancel, done: make(chan struct{})}
	go func() {
		for err := range cg.Errors() {
			t.Logf("sarama member %s: %v", name, err)
		}
	}()
	go func() {
		defer close(m.done)
		// Consume returns at every rebalance; the member joins again
		// until it is stopped.
		for runCtx.Err() == nil {
			if err := cg.Consume(runCtx, []string{topic}, m); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) && runCtx.Err() == nil {
				t.Logf("sarama member %s: consume: %v", name, err)
			}
		}
	}()
	t.Cleanup(m.leave)
	return m
}

// leave stops consuming and closes the group, which sends LeaveGroup.
func (m *saramaGroupMember) leave() {
	m.stopOnce.Do(func() {
		m.cancel()
		<-m.done
		if err := m.cg.Close(); err != nil {
			m.t.Errorf("close sarama consumer group: %v", err)
		}
	})
}

func (m *saramaGroupMember) Setup(s sarama.ConsumerGroupSession) error {
	m.set(s.Claims()[m.topic])
	return nil
}

func (m *saramaGroupMember) Cleanup(sarama.ConsumerGroupSession) error {
	m.set(nil)
	return nil
}

func (m *saramaGroupMember) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if m.onRecord != nil && m.onRecord(msg.Partition, msg.Offset) {
			s.MarkMessage(msg, "")
			s.Commit()
		}
	}
	return nil
}

// TestGroupSaramaShareAndRebalance: sarama range members split, take over
// and share a 6-partition topic.
func TestGroupSaramaShareAndRebalance(t *testing.T) {
	testGroupShareAndRebalance(t, joinSaramaGroup)
}

// TestGroupSaramaCommitAndResume: sarama's committed offsets are where
// the next sarama member of the group resumes.
func TestGroupSaramaCommitAndResume(t *testing.T) {
	testGroupCommitAndResume(t, joinSaramaGroup)
}
