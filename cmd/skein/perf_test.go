package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPerfProduceFixedRateJSON creates the topic with a config, produces
// at a fixed rate from two producers, and checks the JSON line: every
// record acknowledged, the schedule kept (a run cannot finish before its
// last record is due), latency percentiles in order; then reads it all
// back with perf consume.
func TestPerfProduceFixedRateJSON(t *testing.T) {
	addr := startTestBroker(t)
	out := mustRun(t, runPerf, "", "produce", "-b", addr, "--topic", "pf", "--partitions", "2",
		"--config", "max.message.bytes=2000000", "--producers", "2", "--num-records", "600",
		"--record-size", "100", "--throughput", "2000", "--linger", "0s", "--label", "t1", "--json")
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one JSON line, got:\n%s", out)
	}
	var res perfResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if res.Label != "t1" || res.Mode != "fixed-rate" || res.Producers != 2 || res.Records != 600 || res.Errors != 0 || res.TargetPerSec != 2000 {
		t.Fatalf("result %+v", res)
	}
	// 300 records per producer at 1000/s: the last is due after 299 ms.
	if res.Seconds < 0.299 {
		t.Fatalf("finished in %.3f s, before the schedule allowed", res.Seconds)
	}
	if res.P50Ms == nil || !(*res.P50Ms <= *res.P99Ms && *res.P99Ms <= *res.P999Ms && *res.P999Ms <= *res.MaxLatencyMs) || *res.P50Ms <= 0 {
		t.Fatalf("latencies %v %v %v %v", res.P50Ms, res.P99Ms, res.P999Ms, res.MaxLatencyMs)
	}
	desc := mustRun(t, runTopic, "", "describe", "pf", "-b", addr)
	if !strings.Contains(desc, "max.message.bytes=2000000") {
		t.Fatalf("topic config not applied:\n%s", desc)
	}
	var got map[string]any
	cons := mustRun(t, runPerf, "", "consume", "-b", addr, "--topic", "pf", "--messages", "600", "--json")
	if err := json.Unmarshal([]byte(cons), &got); err != nil || got["records"].(float64) != 600 {
		t.Fatalf("consume: %v %s", err, cons)
	}
}

// TestPerfProduceThroughputRecordsNoLatency: unthrottled, no latency is
// recorded (it would cost client CPU), and the text summary says so by
// leaving it out.
func TestPerfProduceThroughputRecordsNoLatency(t *testing.T) {
	addr := startTestBroker(t)
	out := mustRun(t, runPerf, "", "produce", "-b", addr, "--topic", "pt", "--num-records", "2000", "--record-size", "10")
	if !strings.HasPrefix(out, "2000 records sent, ") || strings.Contains(out, "latency") {
		t.Fatalf("output %q", out)
	}
	out = mustRun(t, runPerf, "", "produce", "-b", addr, "--topic", "pt", "--num-records", "100", "--latency", "--json")
	if !strings.Contains(out, `"p99_ms"`) || !strings.Contains(out, `"mode":"throughput"`) {
		t.Fatalf("--latency output %q", out)
	}
}

// TestPerfTransactionalProduceReadCommitted: two transactional producers
// commit transactions of 40 records (the last of each one shorter), and a
// read_committed consume reads every record; an unknown isolation level is
// refused.
func TestPerfTransactionalProduceReadCommitted(t *testing.T) {
	addr := startTestBroker(t)
	out := mustRun(t, runPerf, "", "produce", "-b", addr, "--topic", "ptx", "--partitions", "3", "--producers", "2",
		"--num-records", "500", "--record-size", "10", "--transactional-id", "perf-t", "--transaction-size", "40", "--json")
	var res perfResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Records != 500 || res.Errors != 0 || res.TransactionSize != 40 {
		t.Fatalf("produce: %v %+v", err, res)
	}
	var got map[string]any
	cons := mustRun(t, runPerf, "", "consume", "-b", addr, "--topic", "ptx", "--messages", "500", "--isolation-level", "read_committed", "--json")
	if err := json.Unmarshal([]byte(cons), &got); err != nil || got["records"].(float64) != 500 || got["isolation_level"] != "read_committed" {
		t.Fatalf("consume: %v %s", err, cons)
	}
	if r := runCLI(t, runPerf, "", "consume", "-b", addr, "--topic", "ptx", "--isolation-level", "committed"); r.err == nil {
		t.Fatal("--isolation-level committed accepted")
	}
}

func TestPerfProduceFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--throughput", "10", "--rate-mb", "1"},
		{"--duration", "1s"},
		{"--config", "retention.ms=1"},
		{"--producers", "0"},
		{"--num-records", "0"},
		{"--transactional-id", "x", "--acks", "1"},
		{"--transactional-id", "x", "--transaction-size", "0"},
	} {
		r := runCLI(t, runPerf, "", append([]string{"produce", "-b", "127.0.0.1:1"}, args...)...)
		if r.err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestPerfPartitionsCreatesAndWaitsInSync creates 25 partitions of RF=1
// in topics of 10 (the last one of 5) on a one-broker cluster and checks
// the JSON line and the topics it made.
func TestPerfPartitionsCreatesAndWaitsInSync(t *testing.T) {
	addr := startTestBroker(t)
	out := mustRun(t, runPerf, "", "partitions", "-b", addr, "--topic-prefix", "pp", "--partitions", "25",
		"--per-topic", "10", "--replication-factor", "1", "--topics-per-request", "2", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if res["partitions"].(float64) != 25 || res["topics"].(float64) != 3 ||
		res["in_sync_seconds"].(float64) < res["created_seconds"].(float64) {
		t.Fatalf("result %v", res)
	}
	desc := mustRun(t, runTopic, "", "describe", "pp-2", "-b", addr)
	if !strings.Contains(desc, "PartitionCount: 5") {
		t.Fatalf("the last topic holds the remainder:\n%s", desc)
	}
}
