package main

import (
	"regexp"
	"strings"
	"testing"
)

// tableRow finds the first output line whose fields start with the given
// cells and returns all of its fields.
func tableRow(t *testing.T, out string, firstCells ...string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(firstCells) && strings.Join(f[:len(firstCells)], " ") == strings.Join(firstCells, " ") {
			return f
		}
	}
	t.Fatalf("no row starting with %q in:\n%s", firstCells, out)
	return nil
}

func TestTopicLifecycle(t *testing.T) {
	addr := startTestBroker(t)
	b := []string{"-b", addr}

	out := mustRun(t, runTopic, "", append([]string{"create", "orders", "--partitions", "3", "--config", "retention.ms=86400000"}, b...)...)
	if want := "Created topic orders (3 partitions, replication factor 1).\n"; out != want {
		t.Fatalf("create printed %q, want %q", out, want)
	}
	mustRun(t, runTopic, "", append([]string{"create", "--topic", "strict", "--config", "min.insync.replicas=2"}, b...)...)

	out = mustRun(t, runTopic, "", append([]string{"list"}, b...)...)
	if got := tableRow(t, out, "orders"); strings.Join(got, " ") != "orders 3 1" {
		t.Errorf("list row %q, want orders 3 1", got)
	}
	if got := tableRow(t, out, "strict"); strings.Join(got, " ") != "strict 1 1" {
		t.Errorf("list row %q, want strict 1 1", got)
	}

	out = mustRun(t, runTopic, "", append([]string{"describe", "orders", "strict"}, b...)...)
	if !regexp.MustCompile(`Topic: orders .*PartitionCount: 3 .*ReplicationFactor: 1 .*MinInSyncReplicas: 1 .*Configs: retention.ms=86400000`).MatchString(out) {
		t.Errorf("describe summary of orders is wrong:\n%s", out)
	}
	for _, p := range []string{"0", "1", "2"} {
		// PARTITION LEADER LEADER-EPOCH REPLICAS ISR HIGH-WATERMARK STATUS
		if got := strings.Join(tableRow(t, out, p), " "); got != p+" 1 0 1 1 0 ok" {
			t.Errorf("describe partition row %q, want %q", got, p+" 1 0 1 1 0 ok")
		}
	}
	// min.insync.replicas=2 with one replica: acks=all cannot succeed.
	strictPart := out[strings.Index(out, "Topic: strict"):]
	if got := strings.Join(tableRow(t, strictPart, "0"), " "); got != "0 1 0 1 1 0 under-min-isr" {
		t.Errorf("strict partition row %q, want under-min-isr", got)
	}

	out = mustRun(t, runTopic, "", append([]string{"describe", "--under-min-isr-partitions"}, b...)...)
	if strings.Contains(out, "Topic: orders") || !strings.Contains(out, "Topic: strict") {
		t.Errorf("--under-min-isr-partitions should show only strict:\n%s", out)
	}

	out = mustRun(t, runTopic, "", append([]string{"alter", "orders", "--partitions", "5", "--config", "retention.ms=1000", "--delete-config", "cleanup.policy"}, b...)...)
	want := "Altered configs of topic orders: set retention.ms=1000, deleted cleanup.policy.\nTopic orders now has 5 partitions.\n"
	if out != want {
		t.Errorf("alter printed %q, want %q", out, want)
	}
	out = mustRun(t, runTopic, "", append([]string{"describe", "orders"}, b...)...)
	if !strings.Contains(out, "PartitionCount: 5") || !strings.Contains(out, "Configs: retention.ms=1000\n") {
		t.Errorf("describe after alter:\n%s", out)
	}

	out = mustRun(t, runTopic, "", append([]string{"delete", "orders"}, b...)...)
	if out != "Deleted topic orders.\n" {
		t.Errorf("delete printed %q", out)
	}
	out = mustRun(t, runTopic, "", append([]string{"list"}, b...)...)
	if strings.Contains(out, "orders") {
		t.Errorf("orders still listed after delete:\n%s", out)
	}
}

// TestTopicClusterErrors checks that errors answered by the cluster are
// shown as the Kafka error name and its explanation, and fail the command.
func TestTopicClusterErrors(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "taken", "--partitions", "3", "-b", addr)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"create existing", []string{"create", "taken"}, `create topic "taken": TOPIC_ALREADY_EXISTS: Topic with this name already exists.`},
		{"describe missing", []string{"describe", "missing"}, `describe topic "missing": UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.`},
		{"list missing", []string{"list", "missing"}, `list topic "missing": UNKNOWN_TOPIC_OR_PARTITION: `},
		{"delete missing", []string{"delete", "missing"}, `delete topic "missing": UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.`},
		{"shrink", []string{"alter", "taken", "--partitions", "2"}, `grow topic "taken" to 2 partitions: INVALID_PARTITIONS: `},
		{"unknown config", []string{"alter", "taken", "--config", "no.such.property=1"}, `alter configs of topic "taken": INVALID_CONFIG: Configuration is invalid. (broker: `},
		{"bad create config", []string{"create", "fresh", "--config", "retention.ms=soon"}, `create topic "fresh": INVALID_CONFIG: Configuration is invalid.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, runTopic, "", append(tt.args, "-b", addr)...)
			if r.err == nil {
				t.Fatalf("succeeded, want an error containing %q; stdout:\n%s", tt.want, r.stdout)
			}
			if !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", r.err, tt.want)
			}
			if strings.Contains(r.err.Error(), "\n") {
				t.Errorf("error spans lines: %q", r.err)
			}
		})
	}
}

// TestTopicFlagErrors checks refusals that need no cluster.
func TestTopicFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: skein topic"},
		{[]string{"rename"}, `unknown subcommand "rename"`},
		{[]string{"create"}, "name the topic to create"},
		{[]string{"create", "t", "--partitions", "0"}, "--partitions 0"},
		{[]string{"create", "t", "--replication-factor", "40000"}, "--replication-factor 40000"},
		{[]string{"create", "t", "--config", "a=1", "--config", "a=2"}, "--config a is given more than once"},
		{[]string{"create", "t", "--config", "novalue"}, "want key=value"},
		{[]string{"alter", "a", "b", "--partitions", "2"}, "exactly one topic"},
		{[]string{"alter", "a"}, "nothing to alter"},
		{[]string{"alter", "a", "--config", "x=1", "--delete-config", "x"}, "config x is given more than once"},
		{[]string{"delete"}, "name the topics to delete"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// An unroutable bootstrap address: these must fail before connecting.
			r := runCLI(t, runTopic, "", append(tt.args, "-b", "127.0.0.1:1")...)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", r.err, tt.want)
			}
		})
	}
}
