package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestClusterBalance empties broker 3 (decommission), then has
// `cluster balance` plan and start the moves that give it its share back.
func TestClusterBalance(t *testing.T) {
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", "spread", "--partitions", "6", "--replication-factor", "1", "-b", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	mustRun(t, runBroker, "", "decommission", "--broker", "3", "--execute", "--unregister=false", "-b", addr)
	awaitLoad(ctx, t, adm, "spread", func(load map[int32]int) bool { return load[3] == 0 && load[1]+load[2] == 6 })

	out := mustRun(t, runCluster, "", "balance", "--dry-run", "-b", addr)
	if !strings.Contains(out, "broker 3: 0") || strings.Count(out, "-> 3 (") != 2 || strings.Contains(out, "Successfully") {
		t.Fatalf("dry run: want two moves onto broker 3, nothing started:\n%s", out)
	}
	out = mustRun(t, runCluster, "", "balance", "--execute", "-b", addr)
	if !strings.Contains(out, "Successfully started partition reassignments") {
		t.Fatalf("execute:\n%s", out)
	}
	awaitLoad(ctx, t, adm, "spread", func(load map[int32]int) bool { return load[1] == 2 && load[2] == 2 && load[3] == 2 })
	if out := mustRun(t, runCluster, "", "balance", "--dry-run", "-b", addr); !strings.Contains(out, "nothing to move") {
		t.Fatalf("after the moves:\n%s", out)
	}
	if r := runCLI(t, runCluster, "", "balance", "-b", addr); r.err == nil || !strings.Contains(r.err.Error(), "--dry-run") {
		t.Fatalf("neither --dry-run nor --execute: %v", r.err)
	}
}

// awaitLoad waits until the replicas per broker of topic, with no
// reassignment in progress, satisfy cond.
func awaitLoad(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, cond func(map[int32]int) bool) {
	t.Helper()
	for {
		load := map[int32]int{}
		md, err := adm.Metadata(ctx, topic)
		moving, lerr := adm.ListPartitionReassignments(ctx, nil)
		if err == nil && lerr == nil {
			for _, p := range md.Topics[topic].Partitions {
				for _, r := range p.Replicas {
					load[r]++
				}
			}
			if len(moving) == 0 && cond(load) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replicas per broker of %s: %v (errors %v, %v)", topic, load, err, lerr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
