package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestClusterIDMismatchIsReported: a node started with another cluster.id
// than its peers can never join them. It says so once, at error level,
// with both ids and what to do, and /readyz says why it is not ready
// (it used to log "broker started" and then nothing above debug). As a
// voter its peers' raft frames name their cluster; as a broker-only node
// the controller's refusal of its metadata fetch does.
func TestClusterIDMismatchIsReported(t *testing.T) {
	// Subtest names without commas: the test's temporary directory lands
	// in log.dirs, a comma-separated list.
	t.Run("voter", func(t *testing.T) { testClusterIDMismatch(t, combinedRoles) })
	t.Run("broker-only", func(t *testing.T) { testClusterIDMismatch(t, brokerOnly) })
}

func testClusterIDMismatch(t *testing.T, role string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newRolesCluster(t, []string{combinedRoles, combinedRoles, role}, nil, node.Options{})
	const foreign = "some-other-cluster"
	c.props[2]["cluster.id"] = foreign
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.props[2]["admin.listeners"] = "http://" + admin
	c.start(0)
	c.start(1)
	var logs testcluster.Buffer
	c.startWith(2, node.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	for i := range 2 {
		select {
		case <-c.brokers[i].Registered():
		case <-ctx.Done():
			t.Fatalf("broker %d did not register", i+1)
		}
	}

	var why string
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			why = string(body)
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("/readyz of the foreign node says ready: %s", why)
			}
			if strings.Contains(why, "cluster id mismatch") {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz never named the cluster id mismatch; last answer %q; logs:\n%s", why, logs.String())
		case <-time.After(externalPollInterval):
		}
	}
	for _, want := range []string{foreign, testcluster.ClusterID} {
		if !strings.Contains(why, want) {
			t.Errorf("/readyz %q does not name cluster id %q", why, want)
		}
	}
	var errorLines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			errorLines = append(errorLines, line)
		}
	}
	if len(errorLines) != 1 {
		t.Fatalf("want the mismatch logged once at error level, got %d error lines:\n%s", len(errorLines), strings.Join(errorLines, "\n"))
	}
	for _, want := range []string{foreign, testcluster.ClusterID, "cluster.id"} {
		if !strings.Contains(errorLines[0], want) {
			t.Errorf("error line %q does not say %q", errorLines[0], want)
		}
	}
}
