package main

import (
	"context"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/testcluster"
)

// TestClusterBalance empties broker 3 (decommission), then has
// `cluster balance` plan and start the moves that give it its share back.
func TestClusterBalance(t *testing.T) {
	addr, adm, ctx := balanceTestCluster(t, "spread")

	mustRun(t, runBroker, "", "decommission", "--broker", "3", "--execute", "--unregister=false", "-b", addr)
	awaitLoad(ctx, t, adm, "spread", func(load map[int32]int) bool { return load[3] == 0 && load[1]+load[2] == 6 })

	// The brokers share this machine's filesystem, whose usage is not
	// theirs to judge: no ceiling on it.
	out := mustRun(t, runCluster, "", "balance", "--dry-run", "--max-disk-usage-percent", "100", "-b", addr)
	if !strings.Contains(out, "broker 3: 0") || strings.Count(out, "-> 3 (") != 2 || strings.Contains(out, "Successfully") {
		t.Fatalf("dry run: want two moves onto broker 3, nothing started:\n%s", out)
	}
	out = mustRun(t, runCluster, "", "balance", "--execute", "--max-disk-usage-percent", "100", "-b", addr)
	if !strings.Contains(out, "Successfully started partition reassignments") {
		t.Fatalf("execute:\n%s", out)
	}
	awaitLoad(ctx, t, adm, "spread", func(load map[int32]int) bool { return load[1] == 2 && load[2] == 2 && load[3] == 2 })
	if out := mustRun(t, runCluster, "", "balance", "--dry-run", "--max-disk-usage-percent", "100", "-b", addr); !strings.Contains(out, "nothing to move") {
		t.Fatalf("after the moves:\n%s", out)
	}
	if r := runCLI(t, runCluster, "", "balance", "-b", addr); r.err == nil || !strings.Contains(r.err.Error(), "--dry-run") {
		t.Fatalf("neither --dry-run nor --execute: %v", r.err)
	}
}

// TestClusterBalanceDisk: replica counts are even (two partitions per
// broker) but only broker 1's partitions hold data, 1 MiB each; the dry
// run reads every broker's DescribeLogDirs and plans disk-driven moves off
// broker 1, showing their sizes and each broker's bytes.
func TestClusterBalanceDisk(t *testing.T) {
	addr, adm, ctx := balanceTestCluster(t, "sized")
	awaitLoad(ctx, t, adm, "sized", func(load map[int32]int) bool { return load[1] == 2 && load[2] == 2 && load[3] == 2 })
	md, err := adm.Metadata(ctx, "sized")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pad := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{3}).Read(pad) // incompressible
	for _, p := range md.Topics["sized"].Partitions {
		if p.Replicas[0] != 1 {
			continue
		}
		for range 16 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: p.Partition, Value: pad}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := mustRun(t, runCluster, "", "balance", "--dry-run", "--disk-imbalance-min-bytes", "262144", "--max-disk-usage-percent", "100", "-b", addr)
	t.Logf("dry run:\n%s", out)
	if !regexp.MustCompile(`broker 1: 2 replicas, 2\.0 MiB; .* used \(.*%\), assigned`).MatchString(out) ||
		!strings.Contains(out, "broker 2: 2 replicas, 0 B;") {
		t.Errorf("broker lines:\n%s", out)
	}
	moves := regexp.MustCompile(`sized-\d+: move replica 1 -> [23] \(target \[[23]\], disk imbalance, 1\.0 MiB\)`).FindAllString(out, -1)
	if len(moves) == 0 || strings.Contains(out, "replica imbalance") {
		t.Fatalf("dry run: want disk-driven moves of 1 MiB off broker 1 only:\n%s", out)
	}
	// Unbounded room but a tight ceiling: nothing may fill a broker past
	// 1% of its volume, so nothing moves.
	out = mustRun(t, runCluster, "", "balance", "--dry-run", "--disk-imbalance-min-bytes", "262144", "--max-disk-usage-percent", "1", "-b", addr)
	if strings.Contains(out, "-> ") {
		t.Fatalf("moves onto brokers over the usage ceiling:\n%s", out)
	}
}

// balanceTestCluster starts three brokers with a topic of six partitions
// of one replica; it returns a client address, an admin client and a
// context bounding the test.
func balanceTestCluster(t *testing.T, topic string) (string, *kadm.Client, context.Context) {
	t.Helper()
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", topic, "--partitions", "6", "--replication-factor", "1", "-b", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return addr, adm, ctx
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

// TestClusterBalanceLogDirs: a broker with two log.dirs holds both
// partitions of a topic, 512 KiB each, in its first directory; the dry
// run plans one move between its directories (AlterReplicaLogDirs), not
// with --log-dirs=false, and --execute starts it; the directories end
// with one partition each.
func TestClusterBalanceLogDirs(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	props := testcluster.Props(t, testcluster.Combine(1), map[string]string{"offsets.topic.num.partitions": "1"})
	props[0]["log.dirs"] = d1 + "," + d2
	brokers := startClusterOf(t, props)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", "dirs", "--partitions", "2", "--replication-factor", "1", "-b", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	both := kadm.TopicsSet{"dirs": {0: {}, 1: {}}}
	var req kadm.AlterReplicaLogDirsReq
	req.Add(d1, both)
	if _, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req); err != nil {
		t.Fatal(err)
	}
	inDirs := func() map[string]int {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, both)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]int{}
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.IsFuture {
				in["future"]++
			} else {
				in[filepath.Clean(p.Dir)]++
			}
		})
		return in
	}
	awaitDirs := func(what string, want map[string]int) {
		t.Helper()
		for {
			in := inDirs()
			if maps.Equal(in, want) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: partitions by directory %v, want %v", what, in, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	awaitDirs("both moved to d1", map[string]int{d1: 2})

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pad := make([]byte, 64<<10)
	for p := range int32(2) {
		for range 8 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dirs", Partition: p, Value: pad}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	flags := []string{"--disk-imbalance-min-bytes", "262144", "--max-disk-usage-percent", "100", "-b", addr}
	out := mustRun(t, runCluster, "", append([]string{"balance", "--dry-run"}, flags...)...)
	move := regexp.MustCompile(`dirs-0: move broker 1's replica ` + regexp.QuoteMeta(d1) + ` -> ` + regexp.QuoteMeta(d2) + ` \(log directory imbalance, 512\.\d KiB\)`)
	if !move.MatchString(out) {
		t.Fatalf("dry run: want dirs-0 moved from d1 to d2:\n%s", out)
	}
	if out := mustRun(t, runCluster, "", append([]string{"balance", "--dry-run", "--log-dirs=false"}, flags...)...); !strings.Contains(out, "nothing to move") {
		t.Fatalf("dry run without log directories:\n%s", out)
	}
	out = mustRun(t, runCluster, "", append([]string{"balance", "--execute"}, flags...)...)
	if !strings.Contains(out, "Started moving broker 1's replica of dirs-0 to "+d2) {
		t.Fatalf("execute:\n%s", out)
	}
	awaitDirs("one partition in each", map[string]int{d1: 1, d2: 1})
	if out := mustRun(t, runCluster, "", append([]string{"balance", "--dry-run"}, flags...)...); !strings.Contains(out, "nothing to move") {
		t.Fatalf("after the move:\n%s", out)
	}
}
