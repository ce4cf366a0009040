package main

import (
	"strings"
	"testing"
)

// TestQuotaAlterDescribe: `skein quota` in kafka-configs terms sets,
// describes and deletes user, client-id and default quotas, and says why
// the broker refused a bad one.
func TestQuotaAlterDescribe(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runQuota, "", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1024,request_percentage=12.5", "-b", addr)
	mustRun(t, runQuota, "", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=2048", "-b", addr)
	mustRun(t, runQuota, "", "alter", "--entity-type", "clients", "--entity-name", "app",
		"--add-config", "producer_byte_rate=4096", "--validate-only", "-b", addr)

	out := mustRun(t, runQuota, "", "describe", "-b", addr)
	for _, want := range [][]string{
		{"alice", "-", "producer_byte_rate", "1024"},
		{"alice", "-", "request_percentage", "12.5"},
		{"alice", "<default>", "consumer_byte_rate", "2048"},
	} {
		if row := tableRow(t, out, want[0], want[1], want[2]); strings.Join(row, " ") != strings.Join(want, " ") {
			t.Errorf("row %q, want %q:\n%s", row, want, out)
		}
	}
	if strings.Contains(out, "app") {
		t.Errorf("a --validate-only change was stored:\n%s", out)
	}
	// An entity type with a name: that entity alone.
	out = mustRun(t, runQuota, "", "describe", "--entity-type", "users", "--entity-name", "alice", "-b", addr)
	if strings.Contains(out, "<default>") || !strings.Contains(out, "producer_byte_rate") {
		t.Errorf("describe user alice:\n%s", out)
	}

	r := runCLI(t, runQuota, "", "alter", "--entity-type", "clients", "--entity-name", "app",
		"--add-config", "producer_byte_rate=1.5", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "not a long integer") {
		t.Errorf("a fractional byte rate: err %v, want the broker's reason", r.err)
	}
	r = runCLI(t, runQuota, "", "alter", "--entity-name", "app", "--add-config", "producer_byte_rate=1", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "--entity-type") {
		t.Errorf("a name without a type: err %v", r.err)
	}

	mustRun(t, runQuota, "", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "producer_byte_rate,request_percentage", "-b", addr)
	out = mustRun(t, runQuota, "", "describe", "-b", addr)
	if strings.Contains(out, "producer_byte_rate") || !strings.Contains(out, "consumer_byte_rate") {
		t.Errorf("after deleting alice's quotas:\n%s", out)
	}
}
