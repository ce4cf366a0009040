package main

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestFeaturesCommands: kafka-features' describe, upgrade and downgrade of
// kraft.version against a static quorum of one, which the upgrade makes
// dynamic.
func TestFeaturesCommands(t *testing.T) {
	props := testcluster.Props(t, testcluster.Combine(1), nil)
	b := testcluster.Start(t, props[0], node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(b.Halt)
	testcluster.WaitRegistered(t, []*node.Broker{b})
	addr := b.Addr("PLAINTEXT")
	level := regexp.MustCompile(`(?m)^Feature: kraft\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: (\d)\tEpoch: \d+$`)

	out := mustRun(t, runFeatures, "", "describe", "-b", addr)
	if m := level.FindStringSubmatch(out); m == nil || m[1] != "0" {
		t.Fatalf("describe of a static quorum:\n%s", out)
	}
	res := runCLI(t, runFeatures, "", "upgrade", "--feature", "metadata.version=20", "-b", addr)
	if res.err == nil || !strings.Contains(res.err.Error(), "INVALID_UPDATE_VERSION") {
		t.Fatalf("upgrading an unknown feature: %v", res.err)
	}
	out = mustRun(t, runFeatures, "", "upgrade", "--feature", "kraft.version=1", "--dry-run", "-b", addr)
	if !strings.Contains(out, "kraft.version can be upgraded to 1.") {
		t.Fatalf("dry run said:\n%s", out)
	}
	if m := level.FindStringSubmatch(mustRun(t, runFeatures, "", "describe", "-b", addr)); m == nil || m[1] != "0" {
		t.Fatal("the dry run upgraded")
	}
	out = mustRun(t, runFeatures, "", "upgrade", "--feature", "kraft.version=1", "-b", addr)
	if !strings.Contains(out, "kraft.version was upgraded to 1.") {
		t.Fatalf("upgrade said:\n%s", out)
	}
	if m := level.FindStringSubmatch(mustRun(t, runFeatures, "", "describe", "-b", addr)); m == nil || m[1] != "1" {
		t.Fatal("kraft.version is not finalized at 1 after the upgrade")
	}
	res = runCLI(t, runFeatures, "", "downgrade", "--feature", "kraft.version=0", "-b", addr)
	if res.err == nil || !strings.Contains(res.err.Error(), "INVALID_UPDATE_VERSION") {
		t.Fatalf("downgrading kraft.version: %v", res.err)
	}
	// The quorum is dynamic now: describe shows the voter's endpoint from
	// the log.
	out = mustRun(t, runCluster, "", "quorum", "describe", "-b", addr)
	if !regexp.MustCompile(`(?m)^CurrentVoters:\s+\[\{"id":1,"directoryId":"[A-Za-z0-9_-]{22}","endpoints":\["CONTROLLER://127\.0\.0\.1:\d+"\]\}\]$`).MatchString(out) {
		t.Fatalf("describe after the upgrade:\n%s", out)
	}
}
