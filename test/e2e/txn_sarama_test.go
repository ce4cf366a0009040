package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestTxnSarama: sarama's transactional producer (Transaction.ID,
// BeginTxn/CommitTxn/AbortTxn, AddOffsetsToTxn) commits, aborts and
// commits again with a group's offsets in the transaction; sarama's
// read_committed consumer sees exactly the committed records, its
// read_uncommitted one also the aborted ones, and the group's offsets are
// those of the committed transaction.
func TestTxnSarama(t *testing.T) {
	requirePartitionSide(t)
	tb := startBroker(t)
	ctx := testContext(t, 45*time.Second)
	const topic, grp, parts = "txs", "sarama-txn-grp", 3
	tb.createTopic(topic, parts, nil)

	cfg := saramaIdempotentConfig("skein-e2e-sarama-txn")
	cfg.Producer.Transaction.ID = "tx-sarama"
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	p, err := sarama.NewSyncProducer([]string{tb.addr}, cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer p.Close()

	committed, aborted := map[string]bool{}, map[string]bool{}
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("begin %d: %v", round, err)
		}
		var msgs []*sarama.ProducerMessage
		for i := range 12 {
			v := fmt.Sprintf("r%d-%02d", round, i)
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i % parts), Value: sarama.StringEncoder(v)})
			if commit {
				committed[v] = true
			} else {
				aborted[v] = true
			}
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("send %d: %v", round, err)
		}
		if round == 2 {
			// The consumed position of a consume-transform-produce loop,
			// committed with the transaction (AddOffsetsToTxn, then
			// TxnOffsetCommit at the group's coordinator).
			offsets := map[string][]*sarama.PartitionOffsetMetadata{topic: {{Partition: 1, Offset: 7}}}
			if err := p.AddOffsetsToTxn(offsets, grp); err != nil {
				t.Fatalf("add offsets: %v", err)
			}
		}
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end %d (commit %v): %v", round, commit, err)
		}
	}
	// A committed sentinel at the end of every partition: a consumer that
	// has read it has read everything before it.
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	for part := range int32(parts) {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder("end")}); err != nil {
			t.Fatalf("send sentinel: %v", err)
		}
	}
	if err := p.CommitTxn(); err != nil {
		t.Fatal(err)
	}

	for _, level := range []sarama.IsolationLevel{sarama.ReadCommitted, sarama.ReadUncommitted} {
		seen := saramaConsumeToSentinel(ctx, t, tb.addr, topic, parts, level)
		for v := range committed {
			if seen[v] != 1 {
				t.Errorf("isolation %d: committed %s seen %d times, want once", level, v, seen[v])
			}
		}
		for v := range aborted {
			if want := map[sarama.IsolationLevel]int{sarama.ReadCommitted: 0, sarama.ReadUncommitted: 1}[level]; seen[v] != want {
				t.Errorf("isolation %d: aborted %s seen %d times, want %d", level, v, seen[v], want)
			}
		}
	}
	if got := stableOffsets(ctx, t, tb.client(), grp, topic); len(got) != 1 || got[1] != 7 {
		t.Errorf("group %s offsets %v, want partition 1 at 7", grp, got)
	}
}

// saramaConsumeToSentinel reads every partition of topic from the start
// with sarama at the isolation level until the "end" sentinel, and
// counts the values before it.
func saramaConsumeToSentinel(ctx context.Context, t *testing.T, addr, topic string, parts int32, level sarama.IsolationLevel) map[string]int {
	t.Helper()
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = level
	cfg.Consumer.Return.Errors = true
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer c.Close()
	seen := map[string]int{}
	for part := range parts {
		pc, err := c.ConsumePartition(topic, part, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume %s-%d: %v", topic, part, err)
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				if done = string(m.Value) == "end"; !done {
					seen[string(m.Value)]++
				}
			case err := <-pc.Errors():
				t.Fatalf("sarama %s-%d: %v", topic, part, err)
			case <-ctx.Done():
				t.Fatalf("sarama %s-%d (isolation %d): no sentinel: %v", topic, part, level, ctx.Err())
			}
		}
		pc.Close()
	}
	return seen
}
