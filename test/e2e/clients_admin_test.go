package e2e

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminStaticSegmentBytes is set on the broker so that segment.bytes shows
// a STATIC_BROKER_CONFIG synonym.
const adminStaticSegmentBytes = "536870912"

// TestTopicAdmin walks a topic through its life with kadm: validate-only
// create, create with configs, describe configs with synonyms, incremental
// alter, create partitions, delete and recreate under the same name. The
// steps share one topic and run in order.
func TestTopicAdmin(t *testing.T) {
	tb := startBroker(t, withProp("log.segment.bytes", adminStaticSegmentBytes))
	ctx := testContext(t, 45*time.Second)
	// kadm answers metadata from its client's cache (kgo's MetadataMinAge,
	// at least 10 ms, default 5 s), so a check right after a change would
	// see the old state: every step uses a fresh client.
	fresh := func() *kadm.Client { return kadm.NewClient(tb.client()) }
	const topic = "admin-topic"
	configs := map[string]*string{
		"retention.ms":   kadm.StringPtr("3600000"),
		"cleanup.policy": kadm.StringPtr("compact"),
	}

	t.Run("validate-only create commits nothing", func(t *testing.T) {
		resp, err := fresh().ValidateCreateTopics(ctx, 3, 1, configs, topic)
		if err != nil {
			t.Fatalf("validate create: %v", err)
		}
		if r := resp[topic]; r.Err != nil {
			t.Fatalf("validate create: %v %s", r.Err, r.ErrMessage)
		}
		requireTopicAbsent(ctx, t, fresh(), topic)

		bad, err := fresh().ValidateCreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, topic)
		if err != nil {
			t.Fatalf("validate create with a bad config: %v", err)
		}
		if r := bad[topic]; !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Errorf("bad retention.ms: got %v, want INVALID_CONFIG", r.Err)
		}
		unknown, err := fresh().ValidateCreateTopics(ctx, 3, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, topic)
		if err != nil {
			t.Fatalf("validate create with an unknown config: %v", err)
		}
		if r := unknown[topic]; !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Errorf("unknown config: got %v, want INVALID_CONFIG", r.Err)
		}
		requireTopicAbsent(ctx, t, fresh(), topic)
	})

	t.Run("create with configs", func(t *testing.T) {
		r, err := fresh().CreateTopic(ctx, 3, 1, configs, topic)
		if err != nil || r.Err != nil {
			t.Fatalf("create: %v %v %s", err, r.Err, r.ErrMessage)
		}
		if r.NumPartitions != 3 || r.ReplicationFactor != 1 {
			t.Errorf("created with %d partitions, replication factor %d; want 3, 1", r.NumPartitions, r.ReplicationFactor)
		}
		if c, ok := r.Configs["retention.ms"]; !ok || c.MaybeValue() != "3600000" {
			t.Errorf("create answer's retention.ms = %q (present %v), want 3600000", c.MaybeValue(), ok)
		}
		again, err := fresh().CreateTopic(ctx, 3, 1, nil, topic)
		if err == nil {
			err = again.Err
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Errorf("second create: got %v, want TOPIC_ALREADY_EXISTS", err)
		}
	})

	t.Run("describe configs with synonyms", func(t *testing.T) {
		got := describeTopicConfigs(ctx, t, fresh(), topic)
		retention := requireConfig(t, got, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
		if len(retention.Synonyms) < 2 {
			t.Fatalf("retention.ms synonyms %+v: want the topic override and the broker default", retention.Synonyms)
		}
		if s := retention.Synonyms[0]; s.Key != "retention.ms" || s.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("first retention.ms synonym %s (%v), want the topic override", s.Key, s.Source)
		}
		if !hasSynonym(retention, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}, kmsg.ConfigSourceDefaultConfig) {
			t.Errorf("retention.ms synonyms %+v: want a log.retention.* default", retention.Synonyms)
		}

		segment := requireConfig(t, got, "segment.bytes", adminStaticSegmentBytes, kmsg.ConfigSourceStaticBrokerConfig)
		if len(segment.Synonyms) == 0 || segment.Synonyms[0].Key != "log.segment.bytes" ||
			segment.Synonyms[0].Source != kmsg.ConfigSourceStaticBrokerConfig || derefOr(segment.Synonyms[0].Value) != adminStaticSegmentBytes {
			t.Errorf("segment.bytes synonyms %+v: want log.segment.bytes=%s from the static broker config first",
				segment.Synonyms, adminStaticSegmentBytes)
		}

		maxMessage := requireConfig(t, got, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
		if !hasSynonym(maxMessage, []string{"message.max.bytes"}, kmsg.ConfigSourceDefaultConfig) {
			t.Errorf("max.message.bytes synonyms %+v: want message.max.bytes", maxMessage.Synonyms)
		}
		requireConfig(t, got, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	})

	t.Run("incremental alter configs", func(t *testing.T) {
		alter := func(ops ...kadm.AlterConfig) {
			t.Helper()
			resp, err := fresh().AlterTopicConfigs(ctx, ops, topic)
			if err != nil {
				t.Fatalf("alter %+v: %v", ops, err)
			}
			for _, r := range resp {
				if r.Err != nil {
					t.Fatalf("alter %+v: %v %s", ops, r.Err, r.ErrMessage)
				}
			}
		}
		alter(
			kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("7200000")},
			kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("2000000")},
			kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		)
		got := describeTopicConfigs(ctx, t, fresh(), topic)
		requireConfig(t, got, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
		requireConfig(t, got, "max.message.bytes", "2000000", kmsg.ConfigSourceDynamicTopicConfig)
		requireConfig(t, got, "cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig)

		alter(
			kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
			kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
		)
		got = describeTopicConfigs(ctx, t, fresh(), topic)
		requireConfig(t, got, "cleanup.policy", "delete", kmsg.ConfigSourceDynamicTopicConfig)
		requireConfig(t, got, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
		// Untouched by either request.
		requireConfig(t, got, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)

		// Validate-only checks and changes nothing; a bad value is refused.
		resp, err := fresh().ValidateAlterTopicConfigs(ctx,
			[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("60000")}}, topic)
		if err != nil || len(resp) != 1 || resp[0].Err != nil {
			t.Fatalf("validate alter: %v %+v", err, resp)
		}
		resp, err = fresh().AlterTopicConfigs(ctx,
			[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("later")}}, topic)
		if err != nil || len(resp) != 1 {
			t.Fatalf("alter with a bad value: %v %+v", err, resp)
		}
		if !errors.Is(resp[0].Err, kerr.InvalidConfig) {
			t.Errorf("bad retention.ms: got %v, want INVALID_CONFIG", resp[0].Err)
		}
		got = describeTopicConfigs(ctx, t, fresh(), topic)
		requireConfig(t, got, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	})

	t.Run("create partitions", func(t *testing.T) {
		resp, err := fresh().CreatePartitions(ctx, 2, topic)
		if err != nil || resp[topic].Err != nil {
			t.Fatalf("add 2 partitions: %v %v %s", err, resp[topic].Err, resp[topic].ErrMessage)
		}
		if n := partitionCount(ctx, t, fresh(), topic); n != 5 {
			t.Fatalf("%d partitions after adding 2 to 3, want 5", n)
		}
		shrink, err := fresh().UpdatePartitions(ctx, 3, topic)
		if err != nil {
			t.Fatalf("shrink request: %v", err)
		}
		if !errors.Is(shrink[topic].Err, kerr.InvalidPartitions) {
			t.Errorf("shrinking to 3: got %v, want INVALID_PARTITIONS", shrink[topic].Err)
		}
		// The new partition takes writes.
		producer := tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 4, Value: []byte("new")}).FirstErr(); err != nil {
			t.Fatalf("produce to the new partition 4: %v", err)
		}
	})

	t.Run("delete then recreate is empty", func(t *testing.T) {
		before, err := fresh().ListTopics(ctx, topic)
		if err != nil {
			t.Fatalf("list topics: %v", err)
		}
		oldID := before[topic].ID
		producer := tb.client(kgo.DefaultProduceTopic(topic))
		for i := range 10 {
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatalf("produce before delete: %v", err)
			}
		}
		producer.Close()

		del, err := fresh().DeleteTopic(ctx, topic)
		if err != nil || del.Err != nil {
			t.Fatalf("delete: %v %v %s", err, del.Err, del.ErrMessage)
		}
		requireTopicAbsent(ctx, t, fresh(), topic)

		r, err := fresh().CreateTopic(ctx, 1, 1, nil, topic)
		if err != nil || r.Err != nil {
			t.Fatalf("recreate: %v %v %s", err, r.Err, r.ErrMessage)
		}
		if r.ID == oldID {
			t.Errorf("recreated topic kept the old topic id %v", oldID)
		}
		for _, list := range []func(context.Context, ...string) (kadm.ListedOffsets, error){fresh().ListStartOffsets, fresh().ListEndOffsets} {
			offsets, err := list(ctx, topic)
			if err != nil {
				t.Fatalf("list offsets: %v", err)
			}
			requireListedOffset(t, "recreated topic", offsets, topic, 0, 0)
		}
		got := describeTopicConfigs(ctx, t, fresh(), topic)
		requireConfig(t, got, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)

		// The first record written now is the only one there, at offset 0.
		fresh := tb.client(kgo.DefaultProduceTopic(topic))
		if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("after recreate")}).FirstErr(); err != nil {
			t.Fatalf("produce after recreate: %v", err)
		}
		consumer := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		recs := fs.Records()
		if len(recs) != 1 || recs[0].Offset != 0 || string(recs[0].Value) != "after recreate" {
			t.Fatalf("recreated topic holds %d records, first %+v; want only the new one at offset 0", len(recs), firstOrNil(recs))
		}
	})
}

// TestDescribeCluster checks DescribeCluster against what Metadata says.
func TestDescribeCluster(t *testing.T) {
	tb := startBroker(t)
	ctx := testContext(t, 20*time.Second)
	cl := tb.client()
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	if resp.ClusterID == "" || resp.ClusterID != meta.Cluster {
		t.Errorf("cluster id %q, metadata says %q", resp.ClusterID, meta.Cluster)
	}
	if resp.ControllerID != 1 {
		t.Errorf("controller %d, want 1", resp.ControllerID)
	}
	if resp.Version >= 1 && resp.EndpointType != 1 {
		t.Errorf("endpoint type %d, want 1 (brokers)", resp.EndpointType)
	}
	host, portText, _ := net.SplitHostPort(tb.addr)
	port, _ := strconv.Atoi(portText)
	if len(resp.Brokers) != 1 {
		t.Fatalf("brokers %+v, want exactly node 1", resp.Brokers)
	}
	if b := resp.Brokers[0]; b.NodeID != 1 || b.Host != host || b.Port != int32(port) {
		t.Errorf("broker %d at %s:%d, want 1 at %s", b.NodeID, b.Host, b.Port, tb.addr)
	}
}

// TestMetadataAllTopicsOldVersions asks for all topics the way old clients
// do: Metadata v0 with an empty list (sarama), v1+ with a null list, and
// checks that v1+ with an empty list means no topics.
func TestMetadataAllTopicsOldVersions(t *testing.T) {
	tb := startBroker(t)
	topics := []string{"meta-a", "meta-b", "meta-c"}
	for _, name := range topics {
		tb.createTopic(name, 2, nil)
	}
	ctx := testContext(t, 20*time.Second)

	cfg := sarama.NewConfig()
	// Old enough that sarama sends no ApiVersions first; new enough that
	// it lets us send Metadata v4.
	cfg.Version = sarama.V1_0_0_0
	broker := sarama.NewBroker(tb.addr)
	if err := broker.Open(cfg); err != nil {
		t.Fatalf("sarama open: %v", err)
	}
	defer broker.Close()
	for _, version := range []int16{0, 1, 4} {
		resp, err := broker.GetMetadata(&sarama.MetadataRequest{Version: version})
		if err != nil {
			t.Fatalf("sarama metadata v%d: %v", version, err)
		}
		var names []string
		for _, tm := range resp.Topics {
			if !errors.Is(tm.Err, sarama.ErrNoError) {
				t.Errorf("v%d: topic %s: %v", version, tm.Name, tm.Err)
			}
			if len(tm.Partitions) != 2 {
				t.Errorf("v%d: topic %s has %d partitions, want 2", version, tm.Name, len(tm.Partitions))
			}
			names = append(names, tm.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, topics) {
			t.Errorf("sarama metadata v%d (all topics): %v, want %v", version, names, topics)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].Addr() != tb.addr {
			t.Errorf("v%d: brokers %v, want one at %s", version, resp.Brokers, tb.addr)
		}
	}

	// v1+: an empty (not null) list asks for no topics at all.
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, tb.client())
	if err != nil {
		t.Fatalf("metadata with an empty topic list: %v", err)
	}
	if len(resp.Topics) != 0 {
		t.Errorf("metadata v%d with an empty topic list returned %d topics, want none", resp.Version, len(resp.Topics))
	}
}

func requireTopicAbsent(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	if td, ok := tds[topic]; ok && !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("topic %s exists (err %v), want it absent", topic, td.Err)
	}
}

func partitionCount(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("list topic %s: %v %v", topic, err, tds[topic].Err)
	}
	return len(tds[topic].Partitions)
}

func describeTopicConfigs(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v %s", topic, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// requireConfig checks a described config's value and source.
func requireConfig(t *testing.T, configs map[string]kadm.Config, key, value string, source kmsg.ConfigSource) kadm.Config {
	t.Helper()
	c, ok := configs[key]
	if !ok {
		t.Fatalf("config %s not described", key)
	}
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s = %q from %v, want %q from %v", key, c.MaybeValue(), c.Source, value, source)
	}
	return c
}

func hasSynonym(c kadm.Config, keys []string, source kmsg.ConfigSource) bool {
	for _, s := range c.Synonyms {
		if slices.Contains(keys, s.Key) && s.Source == source {
			return true
		}
	}
	return false
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func firstOrNil(recs []*kgo.Record) *kgo.Record {
	if len(recs) == 0 {
		return nil
	}
	return recs[0]
}
