//go:build cgo

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// secureConfluent: confluent-kafka-go v2 (cgo over the librdkafka its
// module bundles, not Debian's) creates its topic with the AdminClient,
// produces acks=all, consumes in a group committing synchronously, and
// lists and describes the groups.
func secureConfluent(t *testing.T, sc *secureCluster, m secureMode, topic, group string) {
	ctx := testContext(t, 60*time.Second)
	config := func(extra ckafka.ConfigMap) *ckafka.ConfigMap {
		cfg := ckafka.ConfigMap{"bootstrap.servers": strings.Join(m.addrs, ",")}
		for k, v := range m.librdkafka() {
			cfg[k] = v
		}
		for k, v := range extra {
			cfg[k] = v
		}
		return &cfg
	}
	adm, err := ckafka.NewAdminClient(config(nil))
	if err != nil {
		t.Fatalf("confluent admin client: %v", err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []ckafka.TopicSpecification{{Topic: topic, NumPartitions: 3, ReplicationFactor: 3}})
	if err == nil && len(res) == 1 && res[0].Error.Code() != ckafka.ErrNoError {
		err = res[0].Error
	}
	if err != nil {
		t.Fatalf("confluent create topic: %v", err)
	}

	p, err := ckafka.NewProducer(config(ckafka.ConfigMap{"acks": "all", "linger.ms": 5}))
	if err != nil {
		t.Fatalf("confluent producer: %v", err)
	}
	defer p.Close()
	delivered := make(chan ckafka.Event, secureRecords)
	for i := range secureRecords {
		msg := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
			Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, "v%d", i)}
		if err := p.Produce(msg, delivered); err != nil {
			t.Fatalf("confluent produce %d: %v", i, err)
		}
	}
	for range secureRecords {
		select {
		case e := <-delivered:
			if m, ok := e.(*ckafka.Message); !ok || m.TopicPartition.Error != nil {
				t.Fatalf("confluent delivery: %v", e)
			}
		case <-ctx.Done():
			t.Fatal("confluent deliveries did not all arrive")
		}
	}

	c, err := ckafka.NewConsumer(config(ckafka.ConfigMap{"group.id": group, "auto.offset.reset": "earliest",
		"enable.auto.commit": false, "session.timeout.ms": int(clientGroupSession.Milliseconds()),
		"heartbeat.interval.ms": int(clientGroupHeartbeat.Milliseconds())}))
	if err != nil {
		t.Fatalf("confluent consumer: %v", err)
	}
	defer c.Close()
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < secureRecords {
		if ctx.Err() != nil {
			t.Fatalf("confluent group read %d of %d records", len(got), secureRecords)
		}
		msg, err := c.ReadMessage(time.Second)
		if err != nil {
			if kerr, ok := err.(ckafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("confluent group read after %d records: %v", len(got), err)
		}
		got = append(got, string(msg.Value))
	}
	if _, err := c.Commit(); err != nil {
		t.Fatalf("confluent commit: %v", err)
	}
	expectValues(t, "confluent-kafka-go", got, secureRecords)
	sc.expectGroupCommitted(ctx, t, group, topic, secureRecords)

	listed, err := adm.ListConsumerGroups(ctx)
	if err != nil {
		t.Fatalf("confluent list groups: %v", err)
	}
	found := false
	for _, g := range listed.Valid {
		found = found || g.GroupID == group
	}
	if !found || len(listed.Errors) != 0 {
		t.Errorf("confluent ListConsumerGroups as %s: %+v (errors %v), want %s among them", m.principal, listed.Valid, listed.Errors, group)
	}
	described, err := adm.DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		t.Fatalf("confluent describe group: %v", err)
	}
	if d := described.ConsumerGroupDescriptions; len(d) != 1 || d[0].Error.Code() != ckafka.ErrNoError || len(d[0].Members) != 1 {
		t.Errorf("confluent DescribeConsumerGroups %s: %+v, want one member", group, d)
	}
}
