package main

import (
	"strings"
	"testing"
)

// TestConfigsAlterDescribe: `skein configs` in kafka-configs terms sets a
// broker's dynamic rate and the cluster default, describes them with
// their sources and synonyms (only the dynamic ones without --all),
// deletes them, and says why the broker refused a read-only property.
func TestConfigsAlterDescribe(t *testing.T) {
	addr := startTestBroker(t)
	if out := mustRun(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-name", "1",
		"--add-config", "leader.replication.throttled.rate=1000,follower.replication.throttled.rate=2000", "-b", addr); out != "Completed updating config for broker 1.\n" {
		t.Errorf("alter broker 1: %q", out)
	}
	if out := mustRun(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-default",
		"--add-config", "leader.replication.throttled.rate=3000", "-b", addr); out != "Completed updating default config for brokers in the cluster.\n" {
		t.Errorf("alter default: %q", out)
	}
	mustRun(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-name", "1",
		"--add-config", "follower.replication.throttled.rate=5", "--validate-only", "-b", addr)

	out := mustRun(t, runConfigs, "", "describe", "--entity-type", "brokers", "--entity-name", "1", "-b", addr)
	want := "Dynamic configs for broker 1 are:\n" +
		"  follower.replication.throttled.rate=2000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=2000, DEFAULT_CONFIG:follower.replication.throttled.rate=9223372036854775807}\n" +
		"  leader.replication.throttled.rate=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=3000, DEFAULT_CONFIG:leader.replication.throttled.rate=9223372036854775807}\n"
	if out != want {
		t.Errorf("describe broker 1:\n%s\nwant:\n%s", out, want)
	}
	out = mustRun(t, runConfigs, "", "describe", "--entity-type", "brokers", "--entity-default", "-b", addr)
	if !strings.HasPrefix(out, "Default configs for brokers in the cluster are:\n  leader.replication.throttled.rate=3000 ") || strings.Count(out, "\n") != 2 {
		t.Errorf("describe default:\n%s", out)
	}
	out = mustRun(t, runConfigs, "", "describe", "--entity-type", "brokers", "--all", "-b", addr)
	if !strings.Contains(out, "All configs for broker 1 are:") || !strings.Contains(out, "  num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}") {
		t.Errorf("describe --all:\n%s", out)
	}

	r := runCLI(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "num.partitions=3", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "INVALID_REQUEST") || !strings.Contains(r.err.Error(), "cannot update these configs dynamically: num.partitions") {
		t.Errorf("a read-only property: err %v", r.err)
	}
	r = runCLI(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-name", "x", "--add-config", "a=b", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "broker is named by its id") {
		t.Errorf("a broker named x: err %v", r.err)
	}

	mustRun(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-name", "1",
		"--delete-config", "leader.replication.throttled.rate,follower.replication.throttled.rate", "-b", addr)
	mustRun(t, runConfigs, "", "alter", "--entity-type", "brokers", "--entity-default",
		"--delete-config", "leader.replication.throttled.rate", "-b", addr)
	if out := mustRun(t, runConfigs, "", "describe", "--entity-type", "brokers", "--entity-name", "1", "-b", addr); out != "Dynamic configs for broker 1 are:\n" {
		t.Errorf("after deleting:\n%s", out)
	}

	// Topics too, as kafka-configs --entity-type topics.
	mustRun(t, runTopic, "", "create", "t", "-b", addr)
	mustRun(t, runConfigs, "", "alter", "--entity-type", "topics", "--entity-name", "t", "--add-config", "cleanup.policy=[compact,delete],retention.ms=1000", "-b", addr)
	out = mustRun(t, runConfigs, "", "describe", "--entity-type", "topics", "--entity-name", "t", "-b", addr)
	if !strings.Contains(out, "Dynamic configs for topic t are:\n  cleanup.policy=compact,delete ") || !strings.Contains(out, "  retention.ms=1000 ") {
		t.Errorf("describe topic:\n%s", out)
	}
}
