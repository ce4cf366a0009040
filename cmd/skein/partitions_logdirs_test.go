package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPartitionsReassignLogDirs: a plan whose log_dirs names the other of
// the broker's two log directories moves the replica there
// (AlterReplicaLogDirs, as kafka-reassign-partitions does), `skein cluster
// log-dirs` then lists it there, and its records are all still readable.
func TestPartitionsReassignLogDirs(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	addr := startTestBroker(t, "log.dirs="+d1+","+d2)
	mustRun(t, runTopic, "", "create", "dirmoved", "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("dirmoved"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "v%03d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	to := d2
	if _, err := os.Stat(filepath.Join(d2, "dirmoved-0")); err == nil {
		to = d1
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":"dirmoved","partition":0,"replicas":[1],"log_dirs":[%q]}]}`, to)
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, runPartitions, "", "reassign", "--execute", "--plan", file, "-b", addr)
	if !strings.Contains(out, "Successfully started log directory move for: dirmoved-0-1") {
		t.Fatalf("execute:\n%s", out)
	}
	adm := kadm.NewClient(cl)
	for {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"dirmoved": {0: {}}})
		var in []string
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { in = append(in, p.Dir) })
		if err == nil && len(in) == 1 && in[0] == to {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never moved to %s: %v %v", to, in, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	out = mustRun(t, runCluster, "", "log-dirs", "--topic", "dirmoved", "-b", addr)
	if row := tableRow(t, out, "dirmoved", "0"); row[3] != to || row[len(row)-1] != "false" {
		t.Errorf("log-dirs row %q:\n%s", row, out)
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dirmoved": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var n int
	for n < 100 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 100", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprintf("v%03d", n) {
				t.Fatalf("record %d: %q", n, r.Value)
			}
			n++
		})
	}
}
