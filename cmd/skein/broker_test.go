package main

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
)

// awaitMetadata polls Metadata until ok holds for it.
func awaitMetadata(ctx context.Context, t *testing.T, adm *kadm.Client, what string, ok func(kadm.Metadata) bool) kadm.Metadata {
	t.Helper()
	for {
		md, err := adm.Metadata(ctx)
		if err == nil && ok(md) {
			return md
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last metadata %+v)", what, err, md)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// awaitEveryImage polls the metadata image of every broker until ok holds
// for all of them.
func awaitEveryImage(ctx context.Context, t *testing.T, brokers []*node.Broker, what string, ok func(*metadata.Image) bool) {
	t.Helper()
	for {
		all := true
		for _, b := range brokers {
			all = all && ok(b.Image())
		}
		if all {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for every broker's image to hold %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// movingOnto reports whether partition stays-0 is being moved onto broker id.
func movingOnto(im *metadata.Image, id int32) bool {
	tp, ok := im.Topic("stays")
	if !ok {
		return false
	}
	p, ok := tp.Partition(0)
	return ok && slices.Contains(p.AddingReplicas, id)
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }

func listsBroker(md kadm.Metadata, id int32) bool {
	return slices.ContainsFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == id })
}

// TestBrokerDecommission: `skein broker decommission --broker 3` prints a
// plan that replaces broker 3 in every partition holding it; with --execute
// it moves them, reports progress until broker 3 holds none, and
// unregisters it. Before that, `skein broker unregister` refuses a broker
// holding replicas, locally and (with --force, the broker running) at the
// controller, and an unknown id is BROKER_ID_NOT_REGISTERED.
func TestBrokerDecommission(t *testing.T) {
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", "emptied", "--partitions", "3", "--replication-factor", "2", "-b", addr)
	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	awaitEveryImage(wait, t, brokers, "the topic", func(im *metadata.Image) bool { _, ok := im.Topic("emptied"); return ok })

	r := runCLI(t, runBroker, "", "unregister", "--broker", "3", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "still holds replicas") {
		t.Fatalf("unregister of a replica holder: %v\n%s", r.err, r.stdout)
	}
	r = runCLI(t, runBroker, "", "unregister", "--broker", "3", "--force", "-b", addr)
	if !errors.Is(r.err, kerr.InvalidRequest) || !strings.Contains(r.err.Error(), "emptied-") || !strings.Contains(r.stderr, "warning") {
		t.Fatalf("forced unregister of a running replica holder: %v\nstderr:\n%s", r.err, r.stderr)
	}
	if r = runCLI(t, runBroker, "", "unregister", "--broker", "9", "-b", addr); !errors.Is(r.err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregister of an unknown broker: %v", r.err)
	}

	out := mustRun(t, runBroker, "", "decommission", "--broker", "3", "-b", addr)
	if !strings.Contains(out, "Nothing changed") || !strings.Contains(out, "replicas off broker 3") {
		t.Fatalf("dry run:\n%s", out)
	}
	out = mustRun(t, runBroker, "", "decommission", "--broker", "3", "--execute", "--poll", "20ms", "--throttle", "10485760", "-b", addr)
	for _, want := range []string{"Successfully started partition reassignments", "The inter-broker throttle limit was set to 10485760 B/s", "Broker 3 holds no replica.", "Throttle was removed.", "Broker 3 unregistered.", "Broker 3 is still running"} {
		if !strings.Contains(out, want) {
			t.Fatalf("execute: no %q in\n%s", want, out)
		}
	}
	progress := regexp.MustCompile(`^Broker 3: \d+ partitions still to move \(.*\); [0-9.]+ [KMG]?i?B left to copy(, closing at [0-9.]+ [KMG]?i?B/s, (about [0-9hms.]+ left|caught up|not gaining on the leader))?\.$`)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "still to move") && !progress.MatchString(line) {
			t.Fatalf("progress line %q", line)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md := awaitMetadata(ctx, t, adm, "the topic", func(md kadm.Metadata) bool { return len(md.Topics["emptied"].Partitions) == 3 })
	for _, p := range md.Topics["emptied"].Partitions {
		if len(p.Replicas) != 2 || slices.Contains(p.Replicas, 3) {
			t.Fatalf("after decommission %s-%d has replicas %v", "emptied", p.Partition, p.Replicas)
		}
	}
	if out := mustRun(t, runBroker, "", "decommission", "--broker", "3", "-b", addr); !strings.Contains(out, "Broker 3 holds no replica.") {
		t.Fatalf("after the move:\n%s", out)
	}
}

// TestBrokerRecommission: a move onto a stopped broker never finishes;
// `skein broker recommission` cancels the moves off the broker they empty,
// which keeps its replicas. A stopped broker that is still named as a
// replica can be unregistered only with --force.
func TestBrokerRecommission(t *testing.T) {
	brokers := startTestCluster(t, 3)
	addr := brokers[0].Addr("PLAINTEXT")
	mustRun(t, runTopic, "", "create", "stays", "--partitions", "1", "--replication-factor", "2", "-b", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md := awaitMetadata(ctx, t, adm, "the topic", func(md kadm.Metadata) bool { return len(md.Topics["stays"].Partitions) == 1 })
	replicas := md.Topics["stays"].Partitions[0].Replicas
	stopped := int32(1)
	for slices.Contains(replicas, stopped) {
		stopped++
	}
	// Stop a broker outside the partition (never broker 1, the address
	// used), and move one replica onto it: the move waits.
	if stopped == 1 {
		t.Fatalf("partition on %v leaves out broker 1, the bootstrap broker", replicas)
	}
	brokers[stopped-1].Halt()
	running := slices.Delete(slices.Clone(brokers), int(stopped-1), int(stopped))
	awaitMetadata(ctx, t, adm, "the stopped broker fenced", func(md kadm.Metadata) bool { return !listsBroker(md, stopped) })
	leaving := replicas[1]
	target := []int32{replicas[0], stopped}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("stays", 0, target)
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	// Each CLI command asks a broker of its client's choosing, which
	// answers from its image: every image holds the move before one runs.
	awaitEveryImage(ctx, t, running, "the move", func(im *metadata.Image) bool { return movingOnto(im, stopped) })

	r := runCLI(t, runBroker, "", "unregister", "--broker", itoa(stopped), "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "stays-0") {
		t.Fatalf("unregister of a stopped broker named as a replica, without --force: %v", r.err)
	}
	if out := mustRun(t, runBroker, "", "recommission", "--broker", itoa(stopped), "-b", addr); !strings.Contains(out, "No reassignment is moving replicas off broker") {
		t.Fatalf("recommission of a broker nothing moves off:\n%s", out)
	}
	out := mustRun(t, runBroker, "", "recommission", "--broker", itoa(leaving), "-b", addr)
	if !strings.Contains(out, "Successfully cancelled partition reassignments for: stays-0") {
		t.Fatalf("recommission:\n%s", out)
	}
	// Any broker answers ListPartitionReassignments from its image, which
	// may not hold the cancel yet.
	for {
		moving, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"stays": {0: {}}})
		if err == nil && len(moving["stays"]) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after recommission: %v %+v", err, moving)
		case <-time.After(50 * time.Millisecond):
		}
	}
	md = awaitMetadata(ctx, t, adm, "the original replicas", func(md kadm.Metadata) bool {
		return slices.Equal(md.Topics["stays"].Partitions[0].Replicas, replicas)
	})

	// Moving onto the stopped broker again, then removing it for good.
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	// Each CLI command asks a broker of its client's choosing, which
	// answers from its image: every image holds the move before one runs.
	awaitEveryImage(ctx, t, running, "the move", func(im *metadata.Image) bool { return movingOnto(im, stopped) })
	r = runCLI(t, runBroker, "", "unregister", "--broker", itoa(stopped), "--force", "-b", addr)
	if r.err != nil || !strings.Contains(r.stdout, "unregistered") || strings.Contains(r.stdout, "still running") {
		t.Fatalf("forced unregister of a stopped broker: %v\n%s", r.err, r.stdout)
	}
	if r = runCLI(t, runBroker, "", "unregister", "--broker", itoa(stopped), "--force", "-b", addr); !errors.Is(r.err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unregister twice: %v", r.err)
	}
	mustRun(t, runBroker, "", "recommission", "--broker", itoa(leaving), "-b", addr)
}
