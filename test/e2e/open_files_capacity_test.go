package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/node"
)

// TestCreateTopicsBeyondOpenFilesLimit: brokers whose open-files limit
// leaves room for 44 replicas each (a limit of 400, 256 kept free, 100
// open besides replicas; the process's own limit is left alone) tell the
// controller so when they register, and a CreateTopics or CreatePartitions
// asking for more replicas than that on a broker is refused with
// INVALID_PARTITIONS naming the broker and the limit, validate_only
// answering the same (for topics of one request together as well),
// instead of creating partitions no broker can open.
func TestCreateTopicsBeyondOpenFilesLimit(t *testing.T) {
	openFiles := func() (int, int, bool) { return 100, 400, true }
	c := startRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles}, nil, node.Options{OpenFiles: openFiles})
	defer c.dumpGoroutinesIfFailed()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	defer adm.Close()

	refused := func(what string, err error, msg, wantHold string) {
		t.Helper()
		if !errors.Is(err, kerr.InvalidPartitions) {
			t.Fatalf("%s: %v, want INVALID_PARTITIONS", what, err)
		}
		for _, s := range []string{wantHold, "than the 44 its open-files limit (RLIMIT_NOFILE) of 400 lets it keep open", "ulimit -n"} {
			if !strings.Contains(msg, s) {
				t.Fatalf("%s: message %q does not say %q", what, msg, s)
			}
		}
	}

	// 45 partitions of 3 replicas: 45 on every broker, one too many.
	for _, validate := range []bool{true, false} {
		create := adm.CreateTopics
		if validate {
			create = adm.ValidateCreateTopics
		}
		resp, err := create(ctx, 45, 3, nil, "too-big")
		if err != nil {
			t.Fatalf("create too-big (validate_only %v): %v", validate, err)
		}
		r := resp["too-big"]
		refused("create too-big", r.Err, r.ErrMessage, "would hold 45 replicas (0 now, 45 more)")
	}
	// Two topics that fit one by one but not together, in one request:
	// the second is refused, by validate_only too (it decides each topic
	// as if the ones before it were created).
	for _, validate := range []bool{true, false} {
		create := adm.CreateTopics
		if validate {
			create = adm.ValidateCreateTopics
		}
		resp, err := create(ctx, 25, 3, nil, "half-a", "half-b")
		if err != nil {
			t.Fatalf("create half-a and half-b (validate_only %v): %v", validate, err)
		}
		if r := resp["half-a"]; r.Err != nil {
			t.Fatalf("create half-a (validate_only %v): %v %s", validate, r.Err, r.ErrMessage)
		}
		r := resp["half-b"]
		refused("create half-b after half-a", r.Err, r.ErrMessage, "would hold 50 replicas (25 now, 25 more)")
	}
	if del, err := adm.DeleteTopic(ctx, "half-a"); err != nil || del.Err != nil {
		t.Fatalf("delete half-a: %v %v", err, del.Err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("too-big") || topics.Has("half-b") || topics.Has("half-a") {
		t.Fatalf("topics %v: want no refused or deleted one", topics.Names())
	}

	createReplicatedTopic(ctx, t, adm, "fits", 40, 3, nil)
	grow, err := adm.UpdatePartitions(ctx, 45, "fits")
	if err != nil {
		t.Fatal(err)
	}
	refused("grow fits to 45", grow["fits"].Err, grow["fits"].ErrMessage, "would hold 45 replicas (40 now, 5 more)")
	grow, err = adm.UpdatePartitions(ctx, 44, "fits")
	if err != nil || grow["fits"].Err != nil {
		t.Fatalf("grow fits to 44: %v %v %s", err, grow["fits"].Err, grow["fits"].ErrMessage)
	}
	resp, err := adm.CreateTopics(ctx, 1, 1, nil, "one-more")
	if err != nil {
		t.Fatal(err)
	}
	refused("create one-more", resp["one-more"].Err, resp["one-more"].ErrMessage, "would hold 45 replicas (44 now, 1 more)")
}

// TestBalancerPassesOverFullBroker: broker 3 can keep 2 replicas open
// (the limit of 400 and 100 open as above, log.open.files.per.replica 22)
// and holds 2; a topic of single-replica partitions puts 8 on broker 1 and
// 3 on broker 2. The automatic balancer, one move at a time, evens out
// brokers 1 and 2 (to 6 and 5) and moves nothing onto broker 3, although
// it holds the fewest. Planned blind to its capacity, every round's move
// went from broker 1 onto broker 3, was refused, and nothing else moved.
func TestBalancerPassesOverFullBroker(t *testing.T) {
	openFiles := func() (int, int, bool) { return 100, 400, true }
	c := newRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles}, map[string]string{
		"auto.replica.balance.enable":          "true",
		"replica.balance.check.interval.ms":    "1000",
		"replica.balance.max.concurrent.moves": "1",
		// The brokers share this machine's filesystem, whose usage is
		// not theirs to judge.
		"replica.balance.max.disk.usage.percent": "100",
	}, node.Options{OpenFiles: openFiles})
	c.props[2]["log.open.files.per.replica"] = "22"
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	defer c.dumpGoroutinesIfFailed()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	defer adm.Close()

	const topic = "skewed"
	var assignment [][]int32
	for _, b := range []int32{1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3} {
		assignment = append(assignment, []int32{b})
	}
	createAssignedTopic(ctx, t, c.client(), topic, assignment)
	awaitAdmin(ctx, t, "brokers 1 and 2 even, none moving", func() (bool, any) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err
		}
		load := map[int32]int{}
		for _, p := range md.Topics[topic].Partitions {
			for _, r := range p.Replicas {
				load[r]++
			}
		}
		if load[3] > 2 {
			t.Fatalf("broker 3 lists %d replicas, past its capacity of 2: %v", load[3], load)
		}
		list, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		return len(list) == 0 && load[1] == 6 && load[2] == 5 && load[3] == 2, load
	})
}
