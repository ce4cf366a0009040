package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestBrokerLoggers (issue 15): BROKER_LOGGER resources as Kafka's
// brokers serve them, through franz-go (which sends a broker logger
// resource to the broker it names). DescribeConfigs lists a broker's
// loggers and their levels; IncrementalAlterConfigs SET gives the
// partition logger DEBUG on one broker and that broker's log output shows
// the partition's debug lines (segment rolls) at once, DELETE makes it
// follow the root's INFO again and the rolls that follow log nothing; the
// other broker's levels are untouched; unknown loggers and levels, APPEND
// and removing the root's level are refused, and so is a logger resource
// sent to another broker.
func TestBrokerLoggers(t *testing.T) {
	c := newRolesCluster(t, testcluster.Combine(2), nil, node.Options{})
	logs := make([]*testcluster.Buffer, 2)
	for i := range logs {
		logs[i] = new(testcluster.Buffer)
		c.startWith(i, node.Options{Logger: slog.New(slog.NewTextHandler(logs[i], nil))})
	}
	c.waitRegistered()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.client(kgo.ProducerBatchCompression(kgo.NoCompression())) // batches as large as their records
	adm := observerClient(t, c.addrs())

	// segment.bytes 1024 (storage's least) and records of 600 bytes:
	// every append after the first rolls a segment, which the
	// partition's logger notes at DEBUG.
	const topic = "logged"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")}, topic); err != nil {
		t.Fatal(err)
	}
	leader := awaitPartition(ctx, t, adm, topic, 0, "a leader", func(v partitionView) bool { return v.Leader > 0 }).Leader
	other := 3 - leader
	leaderLog := logs[leader-1]
	rolls := func() int {
		n := 0
		for _, line := range strings.Split(leaderLog.String(), "\n") {
			if strings.Contains(line, "rolled segment") && strings.Contains(line, "component=partition") && strings.Contains(line, "partition="+topic+"-0") {
				n++
			}
		}
		return n
	}
	segments := func() int {
		files, err := filepath.Glob(filepath.Join(c.props[leader-1]["log.dirs"], topic+"-0", "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}
	value := []byte(strings.Repeat("v", 600))
	produce := func(n int) {
		t.Helper()
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	describe := func(via kmsg.Requestor, broker int32) (map[string]string, error) {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, fmt.Sprint(broker)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, via)
		if err != nil || len(resp.Resources) != 1 {
			t.Fatalf("describe the loggers of %d: %v %+v", broker, err, resp)
		}
		res := resp.Resources[0]
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return nil, fmt.Errorf("%w: %s", err, derefOr(res.ErrorMessage))
		}
		levels := map[string]string{}
		for _, cfg := range res.Configs {
			if cfg.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || cfg.ReadOnly || cfg.IsSensitive {
				t.Errorf("logger %s of %d: source %s, read-only %v, sensitive %v", cfg.Name, broker, cfg.Source, cfg.ReadOnly, cfg.IsSensitive)
			}
			levels[cfg.Name] = derefOr(cfg.Value)
		}
		return levels, nil
	}
	wantLevels := func(broker int32, want map[string]string) {
		t.Helper()
		got, err := describe(cl, broker)
		if err != nil {
			t.Fatalf("describe the loggers of %d: %v", broker, err)
		}
		for name, level := range want {
			if got[name] != level {
				t.Errorf("broker %d logger %s = %q, want %q (all: %v)", broker, name, got[name], level, got)
			}
		}
	}
	type op struct {
		op    kmsg.IncrementalAlterConfigOp
		name  string
		value *string
	}
	alter := func(via kmsg.Requestor, broker int32, validateOnly bool, ops ...op) error {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, fmt.Sprint(broker)
		for _, o := range ops {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Op, cfg.Name, cfg.Value = o.op, o.name, o.value
			rr.Configs = append(rr.Configs, cfg)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, via)
		if err != nil || len(resp.Resources) != 1 {
			t.Fatalf("alter the loggers of %d: %v %+v", broker, err, resp)
		}
		if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
			return fmt.Errorf("%w: %s", err, derefOr(resp.Resources[0].ErrorMessage))
		}
		return nil
	}
	set := func(name, level string) op { return op{kmsg.IncrementalAlterConfigOpSet, name, kmsg.StringPtr(level)} }
	del := func(name string) op { return op{kmsg.IncrementalAlterConfigOpDelete, name, nil} }

	// At log.level's INFO the partition's rolls log nothing.
	wantLevels(leader, map[string]string{"root": "INFO", "partition": "INFO", "quorum": "INFO", "replica-fetcher": "INFO"})
	produce(2)
	if n := rolls(); n != 0 {
		t.Fatalf("%d roll lines at INFO", n)
	}

	if err := alter(cl, leader, true, set("partition", "DEBUG")); err != nil {
		t.Fatal(err)
	}
	wantLevels(leader, map[string]string{"partition": "INFO"}) // validate_only changed nothing
	if err := alter(cl, leader, false, set("partition", "DEBUG")); err != nil {
		t.Fatal(err)
	}
	wantLevels(leader, map[string]string{"root": "INFO", "partition": "DEBUG", "quorum": "INFO"})
	wantLevels(other, map[string]string{"partition": "INFO"})
	produce(1)
	debugRolls := rolls()
	if debugRolls == 0 {
		t.Fatalf("no roll line of the partition at DEBUG; broker %d logged:\n%s", leader, leaderLog.String())
	}

	// DELETE: back to the root's level; the rolls go on, unlogged.
	if err := alter(cl, leader, false, del("partition")); err != nil {
		t.Fatal(err)
	}
	wantLevels(leader, map[string]string{"partition": "INFO"})
	before := segments()
	produce(3)
	if after := segments(); after <= before {
		t.Fatalf("segments %d then %d: the appends did not roll", before, after)
	}
	if n := rolls(); n != debugRolls {
		t.Fatalf("%d roll lines after DELETE, %d before it", n, debugRolls)
	}

	// The root's level is that of every logger without its own.
	if err := alter(cl, leader, false, set("root", "WARN")); err != nil {
		t.Fatal(err)
	}
	wantLevels(leader, map[string]string{"root": "WARN", "partition": "WARN", "api": "WARN"})
	if err := alter(cl, leader, false, set("root", "INFO")); err != nil {
		t.Fatal(err)
	}

	// Refusals, in Kafka's words.
	for _, bad := range []struct {
		ops  []op
		code *kerr.Error
		want string
	}{
		{[]op{set("kafka.server.ReplicaManager", "DEBUG")}, kerr.InvalidConfig, "Logger kafka.server.ReplicaManager does not exist!"},
		{[]op{set("partition", "debug")}, kerr.InvalidConfig, "not a supported log level"},
		{[]op{set("partition", "VERBOSE")}, kerr.InvalidConfig, "not a supported log level"},
		{[]op{{kmsg.IncrementalAlterConfigOpAppend, "partition", kmsg.StringPtr("DEBUG")}}, kerr.InvalidRequest, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{[]op{{kmsg.IncrementalAlterConfigOpSubtract, "partition", kmsg.StringPtr("DEBUG")}}, kerr.InvalidRequest, "SUBTRACT operation is not allowed"},
		{[]op{del("root")}, kerr.InvalidRequest, "Removing the log level of the root logger is not allowed"},
		{[]op{set("quorum", "DEBUG"), set("quorum", "INFO")}, kerr.InvalidRequest, "duplicate config keys"},
		// One bad operation and nothing applies.
		{[]op{set("quorum", "DEBUG"), set("partition", "LOUD")}, kerr.InvalidConfig, "not a supported log level"},
	} {
		err := alter(cl, leader, false, bad.ops...)
		if !errors.Is(err, bad.code) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("alter %+v: %v, want %s saying %q", bad.ops, err, bad.code.Message, bad.want)
		}
	}
	wantLevels(leader, map[string]string{"quorum": "INFO", "partition": "INFO"})

	// Another broker's loggers are that broker's to describe and alter.
	via := cl.Broker(int(other))
	wantMsg := fmt.Sprintf("Unexpected broker id, expected %d, but received %d", other, leader)
	for api, err := range map[string]error{
		"IncrementalAlterConfigs": alter(via, leader, false, set("partition", "DEBUG")),
		"DescribeConfigs":         func() error { _, err := describe(via, leader); return err }(),
	} {
		if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("%s of broker %d's loggers through broker %d: %v, want INVALID_REQUEST %q", api, leader, other, err, wantMsg)
		}
	}
	wantLevels(leader, map[string]string{"partition": "INFO"})
}
