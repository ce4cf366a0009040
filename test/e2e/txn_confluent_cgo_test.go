//go:build cgo

package e2e

import (
	"fmt"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestTxnConfluent: confluent-kafka-go's transactional producer
// (librdkafka: InitTransactions, BeginTransaction, CommitTransaction,
// AbortTransaction) commits, aborts and commits again; its
// read_committed consumer sees exactly the committed records and its
// read_uncommitted one also the aborted ones. Needs cgo; scripts/test.sh
// runs it in its cgo step.
func TestTxnConfluent(t *testing.T) {
	requirePartitionSide(t)
	tb := startBroker(t)
	ctx := testContext(t, 45*time.Second)
	const topic, parts = "txc", 3
	tb.createTopic(topic, parts, nil)

	p, err := ckafka.NewProducer(&ckafka.ConfigMap{"bootstrap.servers": tb.addr,
		"transactional.id": "tx-confluent", "transaction.timeout.ms": 30000, "linger.ms": 5,
		// Nothing reads the Events channel, where Flush would count the
		// delivery reports as outstanding; failures fail the commit.
		"go.delivery.reports": false})
	if err != nil {
		t.Fatalf("confluent producer: %v", err)
	}
	defer p.Close()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("confluent init transactions: %v", err)
	}
	// run produces msgs in one transaction and commits or aborts it.
	run := func(commit bool, msgs ...*ckafka.Message) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("confluent begin: %v", err)
		}
		for _, m := range msgs {
			if err := p.Produce(m, nil); err != nil {
				t.Fatalf("confluent produce: %v", err)
			}
		}
		if commit {
			err = p.CommitTransaction(ctx) // flushes first
		} else {
			// AbortTransaction purges what is not yet sent; flush so the
			// aborted records are in the log (and read_uncommitted sees
			// them) and the abort marker has something to cover.
			if left := p.Flush(30_000); left != 0 {
				t.Fatalf("confluent flush: %d messages left", left)
			}
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("confluent end transaction (commit %v): %v", commit, err)
		}
	}
	msg := func(part int32, v string) *ckafka.Message {
		tp := topic
		return &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &tp, Partition: part}, Value: []byte(v)}
	}
	committed, aborted := map[string]bool{}, map[string]bool{}
	for round, commit := range []bool{true, false, true} {
		var msgs []*ckafka.Message
		for i := range 12 {
			v := fmt.Sprintf("r%d-%02d", round, i)
			msgs = append(msgs, msg(int32(i%parts), v))
			if commit {
				committed[v] = true
			} else {
				aborted[v] = true
			}
		}
		run(commit, msgs...)
	}
	// A committed sentinel at the end of every partition: a consumer that
	// has read it has read everything before it.
	var sentinels []*ckafka.Message
	for part := range int32(parts) {
		sentinels = append(sentinels, msg(part, "end"))
	}
	run(true, sentinels...)

	for _, level := range []string{"read_committed", "read_uncommitted"} {
		c, err := ckafka.NewConsumer(&ckafka.ConfigMap{"bootstrap.servers": tb.addr, "group.id": "txc-" + level,
			"isolation.level": level, "enable.auto.commit": false})
		if err != nil {
			t.Fatalf("confluent consumer: %v", err)
		}
		var assign []ckafka.TopicPartition
		for part := range int32(parts) {
			tp := topic
			assign = append(assign, ckafka.TopicPartition{Topic: &tp, Partition: part, Offset: ckafka.OffsetBeginning})
		}
		if err := c.Assign(assign); err != nil {
			t.Fatal(err)
		}
		seen, ends := map[string]int{}, 0
		for ends < parts {
			if ctx.Err() != nil {
				t.Fatalf("confluent %s: %d of %d sentinels", level, ends, parts)
			}
			m, err := c.ReadMessage(time.Second)
			if err != nil {
				if kerr, ok := err.(ckafka.Error); ok && kerr.IsTimeout() {
					continue
				}
				t.Fatalf("confluent %s read: %v", level, err)
			}
			if string(m.Value) == "end" {
				ends++
			} else {
				seen[string(m.Value)]++
			}
		}
		c.Close()
		for v := range committed {
			if seen[v] != 1 {
				t.Errorf("%s: committed %s seen %d times, want once", level, v, seen[v])
			}
		}
		for v := range aborted {
			if want := map[string]int{"read_committed": 0, "read_uncommitted": 1}[level]; seen[v] != want {
				t.Errorf("%s: aborted %s seen %d times, want %d", level, v, seen[v], want)
			}
		}
	}
}
