package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// startDynamicPair starts two combined nodes of a dynamic quorum that node
// 1 founds; node 2 waits to be added. It returns node 1's client address
// and node 2's server.properties, written to a file.
func startDynamicPair(t *testing.T) (addr, props2 string, nodes []*node.Broker) {
	t.Helper()
	props := testcluster.Props(t, testcluster.Combine(2), nil)
	testcluster.Dynamic(props)
	quiet := node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, p := range props {
		b := testcluster.Start(t, p, quiet)
		t.Cleanup(b.Halt)
		nodes = append(nodes, b)
	}
	testcluster.WaitRegistered(t, nodes[:1])
	var sb strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range props[1] {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[1][k])
	}
	props2 = filepath.Join(t.TempDir(), "server-2.properties")
	if err := os.WriteFile(props2, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return nodes[0].Addr("PLAINTEXT"), props2, nodes
}

func TestClusterQuorumCommands(t *testing.T) {
	addr, props2, nodes := startDynamicPair(t)

	out := mustRun(t, runCluster, "", "quorum", "describe", "-b", addr)
	for _, want := range []string{
		`(?m)^ClusterId:\s+skein-test-cluster$`,
		`(?m)^LeaderId:\s+1$`,
		`(?m)^CurrentVoters:\s+\[\{"id":1,"directoryId":"[A-Za-z0-9_-]{22}","endpoints":\["CONTROLLER://127\.0\.0\.1:\d+"\]\}\]$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("describe output lacks %s:\n%s", want, out)
		}
	}

	out = mustRun(t, runCluster, "", "quorum", "add-controller", "--config", props2, "-b", addr)
	if !strings.Contains(out, "Added controller 2") {
		t.Errorf("add-controller said:\n%s", out)
	}
	testcluster.WaitRegistered(t, nodes[1:])
	res := runCLI(t, runCluster, "", "quorum", "add-controller", "--config", props2, "-b", addr)
	if res.err == nil || !strings.Contains(res.err.Error(), "DUPLICATE_VOTER") {
		t.Errorf("adding twice: %v", res.err)
	}

	out = mustRun(t, runCluster, "", "quorum", "describe", "--replication", "-b", addr)
	rows := regexp.MustCompile(`(?m)^(\d+)\s+([A-Za-z0-9_-]{22})\s+(\d+)\s+(\d+|-)\s+-?\d+\s+-?\d+\s+(Leader|Follower|Observer)$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 || !strings.HasPrefix(out, "NodeId") {
		t.Fatalf("replication table:\n%s", out)
	}
	var dir2 string
	for _, r := range rows {
		if r[1] == "2" {
			dir2 = r[2]
		}
	}
	if dir2 == "" {
		t.Fatalf("node 2 not among the voters:\n%s", out)
	}

	res = runCLI(t, runCluster, "", "quorum", "remove-controller", "--controller-id", "2", "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA", "-b", addr)
	if res.err == nil || !strings.Contains(res.err.Error(), "VOTER_NOT_FOUND") {
		t.Errorf("removing with a wrong directory id: %v", res.err)
	}
	out = mustRun(t, runCluster, "", "quorum", "remove-controller", "--controller-id", "2", "--controller-directory-id", dir2, "-b", addr)
	if !strings.Contains(out, "Removed controller 2") {
		t.Errorf("remove-controller said:\n%s", out)
	}
	// The leader answered once it applied the change: it shows node 2
	// as an observer (a learner) at once.
	out = mustRun(t, runCluster, "", "quorum", "describe", "-b", addr)
	if !regexp.MustCompile(`(?m)^CurrentObservers:\s+\[.*"id":2[,}]`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^CurrentVoters:\s+\[\{"id":1,`).MatchString(out) {
		t.Fatalf("node 2 not shown as an observer after its removal:\n%s", out)
	}
}
