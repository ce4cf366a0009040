package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

func TestAssessPartition(t *testing.T) {
	tests := []struct {
		name   string
		p      kadm.PartitionDetail
		minISR int
		want   string
	}{
		{"healthy", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 2, "ok"},
		{"one replica behind", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 2, "under-replicated"},
		{"below min ISR", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, 2, "under-replicated,under-min-isr"},
		{"min ISR above replication factor", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}, 2, "under-min-isr"},
		{"min ISR unknown", kadm.PartitionDetail{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 0, "ok"},
		{"no leader", kadm.PartitionDetail{Leader: -1, Replicas: []int32{1, 2}, ISR: []int32{}, Err: kerr.LeaderNotAvailable}, 1,
			"offline,under-replicated,under-min-isr,LEADER_NOT_AVAILABLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := assessPartition(tt.p, tt.minISR)
			if got := h.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if h.healthy() != (tt.want == "ok") {
				t.Errorf("healthy() = %v for %q", h.healthy(), tt.want)
			}
		})
	}
}

func TestClusterDescribe(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "plain", "--partitions", "2", "-b", addr)
	mustRun(t, runTopic, "", "create", "strict", "--config", "min.insync.replicas=2", "-b", addr)

	out := mustRun(t, runCluster, "", "describe", "-b", addr)
	if !regexp.MustCompile(`(?m)^Cluster ID:  \S+\nController:  1$`).MatchString(out) {
		t.Errorf("cluster id / controller missing:\n%s", out)
	}
	if got := strings.Join(tableRow(t, out, "1"), " "); got != "1 "+addr+" - up, active controller" {
		t.Errorf("broker row %q, want %q", got, "1 "+addr+" - up, active controller")
	}
	if !strings.Contains(out, "Counts include no internal topics.") {
		t.Errorf("no word on internal topics:\n%s", out)
	}
	// TOPICS PARTITIONS OFFLINE UNDER-REPLICATED UNDER-MIN-ISR
	if got := strings.Join(tableRow(t, out, "2", "3"), " "); got != "2 3 0 0 1" {
		t.Errorf("health row %q, want 2 3 0 0 1", got)
	}
	if got := strings.Join(tableRow(t, out, "strict"), " "); got != "strict 0 1 1 1 under-min-isr" {
		t.Errorf("unhealthy partition row %q", got)
	}

	for _, args := range [][]string{nil, {"status"}, {"describe", "extra"}} {
		if r := runCLI(t, runCluster, "", append(args, "-b", addr)...); r.err == nil {
			t.Errorf("%q succeeded", args)
		}
	}
}

// TestClusterDescribeThreeBrokers: asked through a broker that is not the
// active controller, with another broker dead, describe names the active
// controller (not the broker that answered), lists the dead broker as
// registered but down, and says the counts include __consumer_offsets.
func TestClusterDescribeThreeBrokers(t *testing.T) {
	brokers := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctrl := brokers[0].ControllerID()
	for ctrl < 1 {
		select {
		case <-ctx.Done():
			t.Fatal("no active controller")
		case <-time.After(20 * time.Millisecond):
		}
		ctrl = brokers[0].ControllerID()
	}
	var asked, victim int
	for i := range brokers {
		if int32(i+1) != ctrl {
			if asked == 0 {
				asked = i + 1
			} else {
				victim = i + 1
			}
		}
	}
	addr := brokers[asked-1].Addr("PLAINTEXT")
	victimAddr := brokers[victim-1].Addr("PLAINTEXT")
	// A group's first FindCoordinator creates __consumer_offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "describe-test"
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no group coordinator: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	brokers[victim-1].Halt()
	for {
		if b, ok := brokers[asked-1].Image().Broker(int32(victim)); ok && b.Fenced {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker %d never fenced", victim)
		case <-time.After(50 * time.Millisecond):
		}
	}

	out := mustRun(t, runCluster, "", "describe", "-b", addr)
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^Controller:  %d$`, ctrl)).MatchString(out) {
		t.Errorf("want controller %d (asked broker %d):\n%s", ctrl, asked, out)
	}
	if got := strings.Join(tableRow(t, out, strconv.Itoa(victim)), " "); got != fmt.Sprintf("%d %s - down (registered, fenced)", victim, victimAddr) {
		t.Errorf("dead broker row %q:\n%s", got, out)
	}
	if got := strings.Join(tableRow(t, out, strconv.Itoa(int(ctrl))), " "); !strings.HasSuffix(got, "up, active controller") {
		t.Errorf("controller row %q:\n%s", got, out)
	}
	if !regexp.MustCompile(`Counts include internal topics: __consumer_offsets \(\d+ partitions\)\.`).MatchString(out) {
		t.Errorf("no word on internal topics:\n%s", out)
	}
}

// startTestCluster starts n in-process brokers, each also a voter of the
// metadata quorum, and waits until all registered.
func startTestCluster(t *testing.T, n int) []*node.Broker {
	t.Helper()
	return startClusterOf(t, testcluster.Props(t, testcluster.Combine(n), map[string]string{"offsets.topic.num.partitions": "3"}))
}

// startClusterOf starts one in-process node per entry of props and waits
// until every broker registered.
func startClusterOf(t testing.TB, props []map[string]string) []*node.Broker {
	t.Helper()
	out := make([]*node.Broker, len(props))
	for i := range out {
		out[i] = testcluster.Start(t, props[i], node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		t.Cleanup(out[i].Halt)
	}
	testcluster.WaitRegistered(t, out)
	return out
}

// TestClusterLogDirs: `skein cluster log-dirs` lists the broker's log
// directory (its volume's size and free space) and each replica's size,
// from DescribeLogDirs.
func TestClusterLogDirs(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "sized", "--partitions", "2", "-b", addr)
	mustRun(t, runTopic, "", "create", "other", "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: make([]byte, 3000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, runCluster, "", "log-dirs", "-b", addr)
	// BROKER DIR PARTITIONS SIZE VOLUME-TOTAL VOLUME-USABLE STATUS
	row := tableRow(t, out, "1")
	if len(row) < 10 || !filepath.IsAbs(row[1]) || row[2] != "3" || row[len(row)-1] != "ok" || row[4] == "-" || row[6] == "-" {
		t.Errorf("log dir row %q:\n%s", row, out)
	}
	// TOPIC PARTITION BROKER DIR SIZE OFFSET-LAG FUTURE
	if got := tableRow(t, out, "sized", "1"); got[4] == "0" || got[len(got)-2] != "0" || got[len(got)-1] != "false" {
		t.Errorf("partition row %q: want a size and no lag:\n%s", got, out)
	}
	if got := tableRow(t, out, "sized", "0"); got[4] != "0" {
		t.Errorf("empty partition row %q:\n%s", got, out)
	}

	only := mustRun(t, runCluster, "", "log-dirs", "--topic", "other", "-b", addr)
	if strings.Contains(only, "sized") || !strings.Contains(only, "other") {
		t.Errorf("--topic other listed:\n%s", only)
	}
}

func TestByteCount(t *testing.T) {
	for n, want := range map[int64]string{-1: "-", 0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := byteCount(n); got != want {
			t.Errorf("byteCount(%d) = %q, want %q", n, got, want)
		}
	}
}
