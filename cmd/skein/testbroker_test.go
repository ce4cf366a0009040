package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
)

// startTestBroker starts an in-process broker on an ephemeral port with
// its own data directory, stopped when the test ends, and returns its
// client address. props are extra broker properties as "key=value".
func startTestBroker(t *testing.T, props ...string) string {
	t.Helper()
	return startTestNode(t, props...).Addr("PLAINTEXT")
}

// startTestNode is startTestBroker returning the broker, for tests that
// need the address of another listener.
func startTestNode(t *testing.T, props ...string) *node.Broker {
	t.Helper()
	all := map[string]string{
		"node.id":   "1",
		"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.dirs":  filepath.Join(t.TempDir(), "broker-1"),
	}
	for _, kv := range props {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("broker property %q: want key=value", kv)
		}
		all[k] = v
	}
	cfg, err := config.NewBroker(all)
	if err != nil {
		t.Fatalf("broker config: %v", err)
	}
	b := node.New(cfg, node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := b.Start(); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}

// cliResult is what one command run printed and returned.
type cliResult struct {
	stdout, stderr string
	err            error
}

// runCLI runs a client command the way main does, with stdin from a
// string and stdout/stderr captured, bounded so a hung command fails the
// test instead of the whole run.
func runCLI(t *testing.T, run func(context.Context, []string, streams) error, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, args, streams{in: strings.NewReader(stdin), out: &out, err: &errOut})
	if ctx.Err() != nil {
		t.Fatalf("%v timed out; stdout:\n%s\nstderr:\n%s", args, out.String(), errOut.String())
	}
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

// mustRun runs a command that must succeed and returns its stdout.
func mustRun(t *testing.T, run func(context.Context, []string, streams) error, stdin string, args ...string) string {
	t.Helper()
	r := runCLI(t, run, stdin, args...)
	if r.err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", args, r.err, r.stdout, r.stderr)
	}
	return r.stdout
}
