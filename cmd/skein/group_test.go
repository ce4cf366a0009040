package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupBrokerProps make a single test broker host groups quickly: no
// initial rebalance delay and a small one-replica __consumer_offsets.
var groupBrokerProps = []string{
	"group.initial.rebalance.delay.ms=0",
	"offsets.topic.replication.factor=1",
	"offsets.topic.num.partitions=3",
}

// groupTestBase is the timestamp of the first record groupTestTopic
// writes; record i of a partition is i seconds later.
var groupTestBase = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// groupTestTopic creates topic with the given partitions and writes n
// records to each, with timestamps one second apart from groupTestBase.
func groupTestTopic(t *testing.T, addr, topic string, partitions, n int) {
	t.Helper()
	mustRun(t, runTopic, "", "create", topic, "--partitions", strconv.Itoa(partitions), "-b", addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(strconv.Itoa(i)),
				Timestamp: groupTestBase.Add(time.Duration(i) * time.Second)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// groupMember is a franz-go member of a consumer group that has read and
// committed want records. It also returns the first offset it read in
// each partition: where the group resumed.
func groupMember(t *testing.T, addr, group, topic string, want int) (*kgo.Client, map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cli-test-member"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	first := map[int32]int64{}
	for got := 0; got < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("member of %s read %d of %d records before the deadline", group, got, want)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("member of %s: %v", group, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
			got++
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("member of %s: commit: %v", group, err)
	}
	return cl, first
}

// offsetRow returns the cells of the offsets table row of a partition:
// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID.
func offsetRow(t *testing.T, out, group, topic string, partition int) string {
	t.Helper()
	return strings.Join(tableRow(t, out, group, topic, strconv.Itoa(partition)), " ")
}

func TestGroupLifecycle(t *testing.T) {
	addr := startTestBroker(t, groupBrokerProps...)
	b := []string{"-b", addr}
	groupTestTopic(t, addr, "events", 3, 10)
	member, first := groupMember(t, addr, "g1", "events", 30)
	if len(first) != 3 || first[0] != 0 || first[1] != 0 || first[2] != 0 {
		t.Fatalf("a new member started at %v, want offset 0 in all 3 partitions", first)
	}

	out := mustRun(t, runGroup, "", append([]string{"list"}, b...)...)
	if got := strings.Join(tableRow(t, out, "g1"), " "); got != "g1 Stable consumer" {
		t.Errorf("list row %q, want g1 Stable consumer\n%s", got, out)
	}

	out = mustRun(t, runGroup, "", append([]string{"list", "--state", "stable"}, b...)...)
	if !strings.Contains(out, "g1") {
		t.Errorf("list --state stable lacks g1:\n%s", out)
	}
	out = mustRun(t, runGroup, "", append([]string{"list", "--state", "Empty"}, b...)...)
	if strings.Contains(out, "g1") {
		t.Errorf("list --state Empty shows the stable g1:\n%s", out)
	}

	out = mustRun(t, runGroup, "", append([]string{"describe", "g1"}, b...)...)
	state := tableRow(t, out, "g1")
	// GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
	if len(state) != 6 || state[2] != "(1)" || state[3] != "cooperative-sticky" || state[4] != "Stable" || state[5] != "1" {
		t.Errorf("state row %q, want g1 <addr> (1) cooperative-sticky Stable 1\n%s", state, out)
	}
	if !strings.Contains(out, "GROUP  TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID") {
		t.Errorf("describe lacks the kafka-consumer-groups header:\n%s", out)
	}
	for p := range 3 {
		f := tableRow(t, out, "g1", "events", strconv.Itoa(p))
		if len(f) != 9 || strings.Join(f[3:6], " ") != "10 10 0" || !strings.HasPrefix(f[6], "cli-test-member") || f[8] != "cli-test-member" {
			t.Errorf("partition %d row %q, want 10 10 0 owned by cli-test-member\n%s", p, f, out)
		}
	}

	// A group with members is refused, as Kafka refuses it.
	r := runCLI(t, runGroup, "", append([]string{"reset-offsets", "--group", "g1", "--topic", "events", "--to-earliest"}, b...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), `offsets of group "g1" can only be reset while the group is inactive, but it is Stable with 1 member`) {
		t.Errorf("reset of an active group: %v\n%s", r.err, r.stdout)
	}
	r = runCLI(t, runGroup, "", append([]string{"delete", "g1"}, b...)...)
	// Said in the project's words, not Kafka's description glued to ours.
	if r.err == nil || !strings.Contains(r.err.Error(), `delete group "g1": it still has members (NON_EMPTY_GROUP); stop its consumers first`) ||
		strings.Contains(r.err.Error(), "The group is not empty.") || !errors.Is(r.err, kerr.NonEmptyGroup) {
		t.Errorf("delete of an active group: %v", r.err)
	}

	// LeaveGroup is answered after the coordinator removed the member
	// (and wrote the group's record): with the last member gone, the group
	// is Empty by the time the answer arrives, so describe sees it at once.
	// Close would leave too but swallows the answer's error.
	leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelLeave()
	if err := member.LeaveGroupContext(leaveCtx); err != nil {
		t.Fatalf("leave g1: %v", err)
	}
	member.Close()
	out = mustRun(t, runGroup, "", append([]string{"describe", "g1"}, b...)...)
	if f := tableRow(t, out, "g1"); len(f) < 6 || f[4] != "Empty" {
		t.Errorf("state row after the last member left %q, want state Empty\n%s", f, out)
	}
	if !strings.Contains(out, "Consumer group 'g1' has no active members.") {
		t.Errorf("describe of an empty group:\n%s", out)
	}
	if got := offsetRow(t, out, "g1", "events", 1); got != "g1 events 1 10 10 0 - - -" {
		t.Errorf("row of an empty group %q", got)
	}

	// Dry run by default: the plan is printed, nothing changes.
	r = runCLI(t, runGroup, "", append([]string{"reset-offsets", "--group", "g1", "--topic", "events", "--to-earliest"}, b...)...)
	if r.err != nil || !strings.Contains(r.stderr, "Dry run") {
		t.Fatalf("dry run: %v\nstderr: %s", r.err, r.stderr)
	}
	for p := range 3 {
		if got := strings.Join(tableRow(t, r.stdout, "g1", "events", strconv.Itoa(p)), " "); got != "g1 events "+strconv.Itoa(p)+" 0" {
			t.Errorf("dry-run plan row %q", got)
		}
	}
	out = mustRun(t, runGroup, "", append([]string{"describe", "g1"}, b...)...)
	if got := offsetRow(t, out, "g1", "events", 0); got != "g1 events 0 10 10 0 - - -" {
		t.Errorf("dry run changed offsets: %q", got)
	}

	steps := []struct {
		args []string
		note string
		rows map[int]string // partition -> CURRENT-OFFSET LOG-END-OFFSET LAG
	}{
		{[]string{"--topic", "events:1", "--to-offset", "4"}, "", map[int]string{0: "10 10 0", 1: "4 10 6", 2: "10 10 0"}},
		{[]string{"--topic", "events:0,2", "--to-offset", "99"}, "offset 99 is past the log end of events-0; using 10", map[int]string{0: "10 10 0", 1: "4 10 6", 2: "10 10 0"}},
		{[]string{"--topic", "events", "--to-datetime", groupTestBase.Add(5 * time.Second).Format(time.RFC3339)}, "", map[int]string{0: "5 10 5", 1: "5 10 5", 2: "5 10 5"}},
		{[]string{"--topic", "events:2", "--to-datetime", strconv.FormatInt(groupTestBase.Add(time.Hour).UnixMilli(), 10)}, "", map[int]string{0: "5 10 5", 1: "5 10 5", 2: "10 10 0"}},
		{[]string{"--topic", "events:0", "--to-earliest"}, "", map[int]string{0: "0 10 10", 1: "5 10 5", 2: "10 10 0"}},
		{[]string{"--all-topics", "--to-latest"}, "", map[int]string{0: "10 10 0", 1: "10 10 0", 2: "10 10 0"}},
	}
	for _, st := range steps {
		args := append(append([]string{"reset-offsets", "g1", "--execute"}, st.args...), b...)
		r := runCLI(t, runGroup, "", args...)
		if r.err != nil {
			t.Fatalf("%v: %v\n%s", st.args, r.err, r.stderr)
		}
		if st.note != "" && !strings.Contains(r.stderr, st.note) {
			t.Errorf("%v: stderr lacks %q:\n%s", st.args, st.note, r.stderr)
		}
		out := mustRun(t, runGroup, "", append([]string{"describe", "g1"}, b...)...)
		for p, want := range st.rows {
			if got := offsetRow(t, out, "g1", "events", p); got != "g1 events "+strconv.Itoa(p)+" "+want+" - - -" {
				t.Errorf("after %v: row %q, want offsets %s", st.args, got, want)
			}
		}
	}

	// A restarted member resumes from the reset offsets.
	mustRun(t, runGroup, "", append([]string{"reset-offsets", "g1", "--execute", "--topic", "events", "--to-offset", "8"}, b...)...)
	member, first = groupMember(t, addr, "g1", "events", 6)
	member.Close()
	if len(first) != 3 || first[0] != 8 || first[1] != 8 || first[2] != 8 {
		t.Errorf("the restarted member started at %v, want offset 8 in all 3 partitions", first)
	}

	out = mustRun(t, runGroup, "", append([]string{"delete", "g1"}, b...)...)
	if out != "Deleted consumer group g1.\n" {
		t.Errorf("delete printed %q", out)
	}
	r = runCLI(t, runGroup, "", append([]string{"describe", "g1"}, b...)...)
	if r.err == nil || !strings.Contains(r.err.Error(), `describe group "g1": the consumer group does not exist`) {
		t.Errorf("describe after delete: %v\n%s", r.err, r.stdout)
	}
	out = mustRun(t, runGroup, "", append([]string{"list"}, b...)...)
	if strings.Contains(out, "g1") {
		t.Errorf("g1 still listed after delete:\n%s", out)
	}
}

// TestGroupResetOffsetsOfNewGroup checks that offsets can be set for a
// group that has never had members, as Kafka allows.
func TestGroupResetOffsetsOfNewGroup(t *testing.T) {
	addr := startTestBroker(t, groupBrokerProps...)
	groupTestTopic(t, addr, "fresh", 2, 3)
	mustRun(t, runGroup, "", "reset-offsets", "--group", "new", "--topic", "fresh", "--to-offset", "2", "--execute", "-b", addr)
	out := mustRun(t, runGroup, "", "describe", "new", "-b", addr)
	for p := range 2 {
		if got := offsetRow(t, out, "new", "fresh", p); got != "new fresh "+strconv.Itoa(p)+" 2 3 1 - - -" {
			t.Errorf("row %q", got)
		}
	}
}

// TestGroupClusterErrors checks refusals that need the cluster's answer.
func TestGroupClusterErrors(t *testing.T) {
	addr := startTestBroker(t, groupBrokerProps...)
	groupTestTopic(t, addr, "small", 2, 1)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"describe missing", []string{"describe", "nobody"}, `describe group "nobody": the consumer group does not exist`},
		{"delete missing", []string{"delete", "nobody"}, `delete group "nobody": GROUP_ID_NOT_FOUND`},
		{"reset unknown topic", []string{"reset-offsets", "g", "--topic", "nope", "--to-earliest"}, `topic "nope": UNKNOWN_TOPIC_OR_PARTITION`},
		{"reset unknown partition", []string{"reset-offsets", "g", "--topic", "small:5", "--to-earliest"}, `topic "small" has no partition 5 (it has 2 partitions)`},
		{"reset all-topics without commits", []string{"reset-offsets", "g", "--all-topics", "--to-earliest"}, `group "g" has no committed offsets`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, runGroup, "", append(tt.args, "-b", addr)...)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q; stdout:\n%s", r.err, tt.want, r.stdout)
			}
		})
	}
}

// TestGroupFlagErrors checks refusals that need no cluster.
func TestGroupFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: skein group"},
		{[]string{"rename"}, `unknown subcommand "rename"`},
		{[]string{"list", "g"}, "list takes no group names"},
		{[]string{"list", "--state", "Running"}, `--state "Running": want one of Empty, Stable,`},
		{[]string{"describe"}, "name the groups to describe"},
		{[]string{"describe", "g", "--all-groups"}, "not both"},
		{[]string{"delete"}, "name the groups to delete"},
		{[]string{"reset-offsets", "--topic", "t", "--to-earliest"}, "name exactly one group"},
		{[]string{"reset-offsets", "a", "b", "--topic", "t", "--to-earliest"}, "name exactly one group"},
		{[]string{"reset-offsets", "g", "--to-earliest"}, "--topic <topic>[:partitions]"},
		{[]string{"reset-offsets", "g", "--topic", "t", "--all-topics", "--to-earliest"}, "either --topic or --all-topics"},
		{[]string{"reset-offsets", "g", "--topic", "t"}, "give exactly one of --to-earliest"},
		{[]string{"reset-offsets", "g", "--topic", "t", "--to-latest", "--to-offset", "3"}, "(got --to-latest, --to-offset)"},
		{[]string{"reset-offsets", "g", "--topic", "t:x", "--to-latest"}, `"x" is not a partition number`},
		{[]string{"reset-offsets", "g", "--topic", "t", "--topic", "t:1", "--to-latest"}, "topic t is given more than once"},
		{[]string{"reset-offsets", "g", "--topic", "t", "--to-datetime", "2026-11-30 14:00"}, "RFC 3339"},
		{[]string{"reset-offsets", "g", "--topic", "t", "--to-latest", "--execute", "--dry-run"}, "either --execute or --dry-run"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// An unroutable bootstrap address: these must fail before connecting.
			r := runCLI(t, runGroup, "", append(tt.args, "-b", "127.0.0.1:1")...)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", r.err, tt.want)
			}
		})
	}
}
