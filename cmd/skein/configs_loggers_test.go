package main

import (
	"strings"
	"testing"
)

// TestConfigsBrokerLoggers: `skein configs --entity-type broker-loggers`
// lists a broker's loggers and levels, sets one, resets it (DELETE) and
// says why the broker refused an unknown level.
func TestConfigsBrokerLoggers(t *testing.T) {
	addr := startTestBroker(t)
	describe := func() string {
		return mustRun(t, runConfigs, "", "describe", "--entity-type", "broker-loggers", "--entity-name", "1", "-b", addr)
	}
	out := describe()
	if !strings.HasPrefix(out, "Dynamic configs for broker-logger 1 are:\n  root=INFO sensitive=false synonyms={}\n") ||
		!strings.Contains(out, "\n  partition=INFO sensitive=false synonyms={}\n") {
		t.Fatalf("describe:\n%s", out)
	}
	if got := mustRun(t, runConfigs, "", "alter", "--entity-type", "broker-loggers", "--entity-name", "1",
		"--add-config", "partition=DEBUG,quorum=WARN", "-b", addr); got != "Completed updating config for broker-logger 1.\n" {
		t.Errorf("alter: %q", got)
	}
	if out := describe(); !strings.Contains(out, "  partition=DEBUG ") || !strings.Contains(out, "  quorum=WARN ") || !strings.Contains(out, "  root=INFO ") {
		t.Errorf("after SET:\n%s", out)
	}
	mustRun(t, runConfigs, "", "alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--delete-config", "partition", "-b", addr)
	if out := describe(); !strings.Contains(out, "  partition=INFO ") || !strings.Contains(out, "  quorum=WARN ") {
		t.Errorf("after DELETE:\n%s", out)
	}
	// Without a name: every broker.
	if out := mustRun(t, runConfigs, "", "describe", "--entity-type", "broker-loggers", "-b", addr); !strings.HasPrefix(out, "Dynamic configs for broker-logger 1 are:\n") {
		t.Errorf("describe every broker:\n%s", out)
	}
	r := runCLI(t, runConfigs, "", "alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--add-config", "partition=LOUD", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "INVALID_CONFIG") || !strings.Contains(r.err.Error(), "not a supported log level") {
		t.Errorf("an unknown level: err %v", r.err)
	}
	r = runCLI(t, runConfigs, "", "alter", "--entity-type", "broker-loggers", "--entity-default", "--add-config", "root=DEBUG", "-b", addr)
	if r.err == nil {
		t.Error("--entity-default accepted for broker loggers")
	}
}
