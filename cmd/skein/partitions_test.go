package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/reassignplan"
)

// TestPartitionsReassign: --generate a plan raising a topic from one
// replica to two on three brokers, --execute it, --verify until every
// partition is completed, and --cancel finds nothing left in progress;
// the records written before the move are all still readable.
func TestPartitionsReassign(t *testing.T) {
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", "moved", "--partitions", "3", "--replication-factor", "1", "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("moved"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("x", 100+i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out := mustRun(t, runPartitions, "", "reassign", "--generate", "--brokers", "1,2,3", "--topics", "moved", "--replication-factor", "2", "-b", addr)
	m := regexp.MustCompile(`(?s)Proposed partition reassignment configuration\n(\{.*\})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no proposed plan:\n%s", out)
	}
	plan, err := reassignplan.Parse([]byte(m[1]))
	if err != nil {
		t.Fatalf("proposed plan: %v\n%s", err, out)
	}
	for _, a := range plan.Partitions {
		if len(a.Replicas) != 2 {
			t.Fatalf("proposed %+v, want two replicas each", plan)
		}
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}

	out = mustRun(t, runPartitions, "", "reassign", "--execute", "--plan", file, "-b", addr)
	if !strings.Contains(out, "Save this to use as the --plan during rollback") || !strings.Contains(out, "Successfully started partition reassignments for moved-0,moved-1,moved-2") {
		t.Fatalf("execute:\n%s", out)
	}
	for {
		out = mustRun(t, runPartitions, "", "reassign", "--verify", "--plan", file, "-b", addr)
		if strings.Count(out, "is completed.") == 3 {
			break
		}
		if !regexp.MustCompile(`^(Reassignment of partition moved-\d (is completed|is still in progress: .* behind leader \d|is still in progress: .*has no log yet).*\n)+$`).MatchString(out) {
			t.Fatalf("verify:\n%s", out)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never completed:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	out = mustRun(t, runPartitions, "", "reassign", "--cancel", "--plan", file, "-b", addr)
	if !strings.Contains(out, "None in progress for: moved-0,moved-1,moved-2") {
		t.Fatalf("cancel:\n%s", out)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("moved"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for n := 0; n < 30; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after the move: %v (%d of 30)", err, n)
		}
		n += fs.NumRecords()
	}
}

func TestPartitionsReassignRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"reassign"},
		{"reassign", "--execute", "--verify", "--plan", bad},
		{"reassign", "--execute"},
		{"reassign", "--execute", "--plan", bad},
		{"reassign", "--execute", "--plan", filepath.Join(dir, "missing.json")},
	} {
		if r := runCLI(t, runPartitions, "", args...); r.err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
