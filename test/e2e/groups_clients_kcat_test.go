package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatGroupMember is `kcat -G` (librdkafka's balanced consumer) as a
// process. kcat reports every rebalance on stderr:
//
//	% Group g rebalanced (memberid rdkafka-…): assigned: t [0], t [1]
//	% Group g rebalanced (memberid rdkafka-…): revoked: t [0], t [1]
//
// and errors as "% ERROR: …" lines; the member's assignment and output
// are read from there.
type kcatGroupMember struct {
	ownership
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and stderr is read

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on every new line
}

// kcatRebalanceLine matches a rebalance report and captures the change.
var (
	kcatRebalanceLine = regexp.MustCompile(`^% Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$`)
	kcatPartitionRef  = regexp.MustCompile(`\[(\d+)\]`)
)

// startKcatGroupMember starts kcat as a member of group consuming topic
// with the given partition.assignment.strategy (librdkafka's default is
// "range,roundrobin"). stdout (the records) is discarded.
func startKcatGroupMember(ctx context.Context, t *testing.T, addr, group, topic, name, strategy string) *kcatGroupMember {
	t.Helper()
	kcat := requireCommand(t, "kcat")
	m := &kcatGroupMember{name: name, done: make(chan struct{}), changed: make(chan struct{})}
	m.cmd = exec.CommandContext(ctx, kcat, "-b", addr, "-G", group, "-o", "beginning",
		"-X", "client.id=kcat-"+name,
		"-X", "partition.assignment.strategy="+strategy,
		"-X", "session.timeout.ms="+strconv.FormatInt(clientGroupSession.Milliseconds(), 10),
		"-X", "heartbeat.interval.ms="+strconv.FormatInt(clientGroupHeartbeat.Milliseconds(), 10),
		"-X", "reconnect.backoff.ms=50",
		topic)
	m.cmd.Stdout = io.Discard
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatalf("kcat stderr: %v", err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start kcat %s: %v", name, err)
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(io.LimitReader(stderr, kcatMaxOutput))
		for sc.Scan() {
			m.record(sc.Text())
		}
		m.cmd.Wait()
	}()
	t.Cleanup(func() {
		m.leave()
		if t.Failed() {
			t.Logf("kcat %s stderr:\n%s", name, strings.Join(m.output(), "\n"))
		}
	})
	return m
}

// record keeps one stderr line and applies a rebalance report to the
// member's assignment.
func (m *kcatGroupMember) record(line string) {
	if r := kcatRebalanceLine.FindStringSubmatch(line); r != nil {
		var parts []int32
		if r[1] == "assigned" {
			for _, ref := range kcatPartitionRef.FindAllStringSubmatch(r[2], -1) {
				p, _ := strconv.ParseInt(ref[1], 10, 32)
				parts = append(parts, int32(p))
			}
		}
		m.set(parts) // an eager revoke takes everything
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines = append(m.lines, line)
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *kcatGroupMember) output() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...)
}

// awaitLine waits until kcat has printed a line containing substr.
func (m *kcatGroupMember) awaitLine(ctx context.Context, t testing.TB, substr string) string {
	t.Helper()
	for {
		m.mu.Lock()
		for _, l := range m.lines {
			if strings.Contains(l, substr) {
				m.mu.Unlock()
				return l
			}
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-m.done:
			t.Fatalf("kcat %s exited without printing %q:\n%s", m.name, substr, strings.Join(m.output(), "\n"))
		case <-ctx.Done():
			t.Fatalf("kcat %s did not print %q before the deadline:\n%s", m.name, substr, strings.Join(m.output(), "\n"))
		}
	}
}

// leave kills the process (SIGKILL): it cannot send LeaveGroup, so the
// coordinator only notices when the session times out.
func (m *kcatGroupMember) leave() {
	if m.cmd.Process != nil {
		m.cmd.Process.Kill()
	}
	<-m.done
}

// TestGroupKcatShareAndRebalance: kcat -G members (range) split a
// 6-partition topic; one is killed and the other owns all six once its
// session times out; a third member then gets a share.
func TestGroupKcatShareAndRebalance(t *testing.T) {
	requireCommand(t, "kcat")
	testGroupShareAndRebalance(t, func(ctx context.Context, t *testing.T, tb *testBroker, group, topic, name string, _ recordFunc) clientGroupMember {
		return startKcatGroupMember(ctx, t, tb.addr, group, topic, name, "range")
	})
}

// franzGroupErrors is a franz-go hook that passes on the errors that end
// a group session (OnGroupManageError), so a test can wait for them.
type franzGroupErrors chan error

func (c franzGroupErrors) OnGroupManageError(err error) {
	select {
	case c <- err:
	default: // the test only needs the first few
	}
}

// startFranzCooperativeMember starts a franz-go member that supports only
// cooperative-sticky, tracking its assignment and group errors.
func startFranzCooperativeMember(t *testing.T, tb *testBroker, group, topic string) (*ownership, franzGroupErrors) {
	t.Helper()
	own := &ownership{}
	errs := make(franzGroupErrors, 8)
	// Cooperative callbacks carry only what changed.
	report := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, changed map[string][]int32) {
			own.change(changed[topic], add)
		}
	}
	cl := tb.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("franz-cooperative"),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(clientGroupSession), kgo.HeartbeatInterval(clientGroupHeartbeat),
		kgo.FetchMaxWait(clientGroupHeartbeat), kgo.WithHooks(errs),
		kgo.OnPartitionsAssigned(report(true)), kgo.OnPartitionsRevoked(report(false)), kgo.OnPartitionsLost(report(false)))
	// The group is managed only while the client is polled.
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-polled })
	return own, errs
}

// TestGroupMixedProtocolsKcatAndFranz: a franz-go member that speaks only
// cooperative-sticky and kcat members that speak range and roundrobin have
// no protocol in common. Whichever joins second is refused with
// INCONSISTENT_GROUP_PROTOCOL, and the first keeps the group.
func TestGroupMixedProtocolsKcatAndFranz(t *testing.T) {
	requireCommand(t, "kcat")
	tb := startGroupBroker(t)
	const topic = "mixed"
	tb.createTopic(topic, clientGroupTopicSize, nil)
	adm := kadm.NewClient(tb.client())

	t.Run("kcat joins a franz-go group", func(t *testing.T) {
		ctx := testContext(t, 30*time.Second)
		const group = "franz-first"
		franz, _ := startFranzCooperativeMember(t, tb, group, topic)
		awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"franz": franz})
		kc := startKcatGroupMember(ctx, t, tb.addr, group, topic, "second", "range,roundrobin")
		line := kc.awaitLine(ctx, t, "% ERROR:")
		if !strings.Contains(line, "Inconsistent group protocol") {
			t.Errorf("kcat's first error is %q, want one about the inconsistent group protocol", line)
		}
		expectGroupKept(ctx, t, adm, group, "cooperative-sticky", "franz-cooperative")
		awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"franz": franz})
	})

	t.Run("franz-go joins a kcat group", func(t *testing.T) {
		ctx := testContext(t, 30*time.Second)
		const group = "kcat-first"
		kc := startKcatGroupMember(ctx, t, tb.addr, group, topic, "first", "range,roundrobin")
		awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"kcat": kc})
		_, errs := startFranzCooperativeMember(t, tb, group, topic)
		select {
		case err := <-errs:
			if !errors.Is(err, kerr.InconsistentGroupProtocol) {
				t.Errorf("franz-go's group error is %v, want INCONSISTENT_GROUP_PROTOCOL", err)
			}
		case <-ctx.Done():
			t.Fatal("franz-go reported no group error before the deadline")
		}
		expectGroupKept(ctx, t, adm, group, "range", "kcat-first")
		awaitPartitionOwners(ctx, t, clientGroupTopicSize, map[string]partitionOwner{"kcat": kc})
	})
}

// expectGroupKept checks the coordinator's view after a refused join: the
// group is Stable with its one first member and that member's protocol.
func expectGroupKept(ctx context.Context, t testing.TB, adm *kadm.Client, group, protocol, clientID string) {
	t.Helper()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	g := described[group]
	if g.Err != nil || g.State != "Stable" || g.Protocol != protocol || len(g.Members) != 1 || g.Members[0].ClientID != clientID {
		t.Errorf("group %s after the refused join: err %v, state %s, protocol %s, %d members %+v; want Stable, %s, only %s",
			group, g.Err, g.State, g.Protocol, len(g.Members), g.Members, protocol, clientID)
	}
}

// kcatGroupRead runs one kcat -G member to completion (args add -c N or
// -e to end it) and returns the partition and offset of every record it
// printed, in order.
func kcatGroupRead(ctx context.Context, t *testing.T, addr, group, topic string, args ...string) [][2]int64 {
	t.Helper()
	kcat := requireCommand(t, "kcat")
	cmd := exec.CommandContext(ctx, kcat, append([]string{"-b", addr, "-G", group, "-f", `%p %o\n`,
		"-X", "auto.offset.reset=earliest", // where nothing is committed; -o would override commits
		"-X", "session.timeout.ms=" + strconv.FormatInt(clientGroupSession.Milliseconds(), 10),
		"-X", "heartbeat.interval.ms=" + strconv.FormatInt(clientGroupHeartbeat.Milliseconds(), 10)},
		append(args, topic)...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat -G %v: %v\n%s", args, err, stderr.String())
	}
	var refs [][2]int64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var p, o int64
		if _, err := fmt.Sscanf(line, "%d %d", &p, &o); err != nil {
			t.Fatalf("kcat printed %q: %v", line, err)
		}
		refs = append(refs, [2]int64{p, o})
	}
	return refs
}

// TestGroupKcatCommitAndResume: a kcat member reads 30 of 60 records and
// exits, committing what it read (librdkafka commits on close); the
// coordinator holds, for each partition it read, the offset after its
// last record; the next kcat member reads exactly the other 30: nothing
// read twice, nothing skipped.
func TestGroupKcatCommitAndResume(t *testing.T) {
	requireCommand(t, "kcat")
	tb := startGroupBroker(t)
	ctx := testContext(t, time.Minute)
	const group, topic, perPartition = "kcat-resumers", "kcat-resumed", 10
	tb.createTopic(topic, clientGroupTopicSize, nil)
	produceToEachPartition(ctx, t, tb, topic, clientGroupTopicSize, perPartition)

	next := map[int32]int64{} // the offset after the last record read, per partition
	for _, r := range kcatGroupRead(ctx, t, tb.addr, group, topic, "-c", "30") {
		if r[1] != next[int32(r[0])] {
			t.Fatalf("the first member read %d/%d after offset %d", r[0], r[1], next[int32(r[0])]-1)
		}
		next[int32(r[0])] = r[1] + 1
	}
	if got := committedOffsets(ctx, t, tb, group); !maps.Equal(got, next) {
		t.Fatalf("committed offsets %v, want the first member's progress %v", got, next)
	}

	rest := kcatGroupRead(ctx, t, tb.addr, group, topic, "-e")
	for _, r := range rest {
		if r[1] != next[int32(r[0])] {
			t.Fatalf("the second member read %d/%d, want offset %d next in that partition", r[0], r[1], next[int32(r[0])])
		}
		next[int32(r[0])] = r[1] + 1
	}
	for p := range int32(clientGroupTopicSize) {
		if next[p] != perPartition {
			t.Errorf("partition %d: the two members read up to offset %d, want %d", p, next[p], perPartition)
		}
	}
}
