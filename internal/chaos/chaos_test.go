package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/testport"
	"github.com/skein-log/skein/internal/verify"
)

func TestPlanFaultsIsDeterministicAndFits(t *testing.T) {
	window := 60 * time.Second
	a := PlanFaults(1, window, AllFaults, 3)
	if b := PlanFaults(1, window, AllFaults, 3); !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if len(a) == 0 {
		t.Fatal("no faults in a minute")
	}
	differs := false
	for seed := int64(2); seed < 10; seed++ {
		if !reflect.DeepEqual(a, PlanFaults(seed, window, AllFaults, 3)) {
			differs = true
		}
	}
	if !differs {
		t.Error("every seed gives the same schedule")
	}
	for seed := int64(1); seed <= 200; seed++ {
		window := time.Duration(5+rand.New(rand.NewPCG(uint64(seed), 1)).IntN(300)) * time.Second
		kinds := [][]FaultKind{AllFaults, {FaultKill}, {FaultPause, FaultRestart}, FaultGroups["network"]}[seed%4]
		var total time.Duration
		for _, s := range PlanFaults(seed, window, kinds, 3) {
			if !slices.Contains(kinds, s.kind) {
				t.Fatalf("seed %d: fault %s not among %v", seed, s.kind, kinds)
			}
			if s.quiet < minQuiet || s.quiet > maxQuiet || s.broker < 0 || s.broker >= 3 {
				t.Fatalf("seed %d: step out of bounds: %v", seed, s)
			}
			length := s.hold
			switch {
			case s.kind == FaultRestart:
				length = 3 * restartEstimate
			case s.kind == FaultCorrupt:
				length = corruptEstimate
			case s.hold < minHold || s.hold > maxHold:
				t.Fatalf("seed %d: hold out of bounds: %v", seed, s)
			case s.kind == FaultSlow && (s.delay < minDelay || s.delay > maxDelay):
				t.Fatalf("seed %d: delay out of bounds: %v", seed, s)
			}
			total += s.quiet + length
		}
		if total > window-finalQuiet {
			t.Fatalf("seed %d: schedule of %v overruns the %v window", seed, total, window)
		}
	}
}

func TestPlanFaultsShortAndEmpty(t *testing.T) {
	if p := PlanFaults(1, 15*time.Second, []FaultKind{FaultKill, FaultPause}, 3); len(p) == 0 {
		t.Error("a 15 s run gets no fault")
	}
	if p := PlanFaults(1, 2*time.Second, AllFaults, 3); len(p) != 0 {
		t.Errorf("a 2 s window holds %v", p)
	}
	if p := PlanFaults(1, time.Minute, nil, 3); len(p) != 0 {
		t.Errorf("no kinds, yet %v", p)
	}
}

func TestDefinitelyNotWritten(t *testing.T) {
	// Only errors the broker answered and the client does not retry prove
	// nothing was written; anything else may hide a write.
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("wrapped: %w", kerr.InvalidRequest), true},
		{kerr.NotEnoughReplicasAfterAppend, false},
		{context.DeadlineExceeded, false},
		{kerr.NotLeaderForPartition, false},
		{kgo.ErrRecordTimeout, false},
	} {
		if got := definitelyNotWritten(tt.err); got != tt.want {
			t.Errorf("definitelyNotWritten(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// The bounded CI run: its seed's schedule holds a kill -9, a SIGSTOP and a
// network partition longer than the brokers' session timeout (3 s), all
// within ciVerifyDuration. TestCIVerifyScheduleHasEveryFault keeps it so.
const (
	ciVerifySeed     = 831
	ciVerifyDuration = 20 * time.Second
	ciVerifyNemesis  = "kill,pause,partition"
)

func TestCIVerifyScheduleHasEveryFault(t *testing.T) {
	kinds, err := ParseNemesis(ciVerifyNemesis)
	if err != nil {
		t.Fatal(err)
	}
	var kill, pause, partition bool
	for _, s := range PlanFaults(ciVerifySeed, ciVerifyDuration, kinds, LocalBrokers) {
		switch {
		case s.kind == FaultKill:
			kill = true
		case s.kind == FaultPause:
			pause = true
		case slices.Contains(FaultGroups["partition"], s.kind) && s.hold > 3*time.Second:
			partition = true
		}
	}
	if !kill || !pause || !partition {
		t.Fatalf("seed %d no longer schedules a kill (%v), a pause (%v) and a partition over 3 s (%v) in %v: pick another seed",
			ciVerifySeed, kill, pause, partition, ciVerifyDuration)
	}
}

// TestVerifyLocalCluster runs a short verify against real broker
// processes with kill, pause and partition faults. It takes about half a
// minute, so it runs only when asked: SKEINTEST_VERIFY=1 go test ./internal/chaos -run TestVerifyLocalCluster
func TestVerifyLocalCluster(t *testing.T) {
	if testing.Short() || os.Getenv("SKEINTEST_VERIFY") != "1" {
		t.Skip("set SKEINTEST_VERIFY=1 (and no -short) to run verify against a local cluster")
	}
	// The test's variables are SKEINTEST_*, not SKEIN_*: the brokers
	// inherit the environment and read every SKEIN_* variable as a server
	// property, refusing unknown ones.
	outDir := os.Getenv("SKEINTEST_VERIFY_OUT")
	bin := buildSkein(t)
	port := freeBasePort(t)
	// SKEINTEST_VERIFY_OUT keeps the history, timeline and broker logs after
	// the test (for CI artifacts); by default they go with the test.
	out := outDir
	if out == "" {
		out = t.TempDir()
	}
	kinds, err := ParseNemesis(ciVerifyNemesis)
	if err != nil {
		t.Fatal(err)
	}
	// The command's defaults (cmd/skein/verify.go), but shorter and slower.
	cfg := &Config{Duration: ciVerifyDuration, Seed: ciVerifySeed, Nemesis: kinds, NemesisName: ciVerifyNemesis, Acks: verify.AcksAll, Idempotent: true,
		Partitions: 3, ReplicationFactor: 3, MinInsync: 2, Producers: 3, Consumers: 2, GroupMembers: 2, Rate: 100, Out: out, Port: port, Brokers: LocalBrokers,
		Topic: fmt.Sprintf("verify-%d", ciVerifySeed), DrainTimeout: time.Minute, Bin: bin}
	cfg.Group = cfg.Topic + "-group"
	h, logs := runLocalVerify(t, cfg)
	res := verify.Check(h)
	verdict := res.Verdict(h.Meta)
	t.Log(verdict)
	if !res.Valid || res.Counts[verify.Lost] != 0 || res.Counts[verify.Duplicated] != 0 || !h.Meta.DrainComplete {
		t.Fatalf("verify found problems (data in %s):\n%s\n%s", out, verdict, logs.String())
	}
	if res.Acked == 0 || res.ReadValues < res.Acked {
		t.Fatalf("too little traffic checked:\n%s", verdict)
	}
	// The group consumed too, split between its members, committing.
	if h.Meta.GroupMembers != 2 || res.GroupReads < res.Acked || res.Rebalances < 2 || res.Commits == 0 {
		t.Fatalf("the group consumed too little:\n%s", verdict)
	}
	readers := map[int]bool{}
	for _, e := range h.Events {
		if e.Type == verify.EventRead && e.Group != "" {
			readers[e.Consumer] = true
		}
	}
	if !readers[3] || !readers[4] {
		t.Fatalf("group members that read: %v, want both 3 and 4:\n%s", readers, verdict)
	}
	var notes []string
	for _, e := range h.Events {
		if e.Type == verify.EventFaultStart {
			notes = append(notes, e.Note)
		}
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"kill -9", "SIGSTOP", "isolate"} {
		if !strings.Contains(all, want) {
			t.Fatalf("no %q fault was inflicted; faults:\n%s\n%s", want, all, logs.String())
		}
	}
	// Every broker dialled every other through the proxies, from its own
	// address, and so did the producers: a partition cut what it meant to.
	for _, link := range []string{"n1->n2", "n2->n3", "n3->n1", "p1->n1", "c1->n2", "c3->n1"} {
		if h.Meta.Connections[link] == 0 {
			t.Errorf("no connection on link %s went through the proxies: %v", link, h.Meta.Connections)
		}
	}
	if err := Report(cfg, h, logs); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, name := range []string{"history.json", "timeline.html", "verdict.txt"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("no %s: %v", name, err)
		}
	}
}

// buildSkein builds the skein binary the local brokers run.
func buildSkein(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skein")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/skein-log/skein/cmd/skein").CombinedOutput(); err != nil {
		t.Fatalf("build skein: %v\n%s", err, out)
	}
	return bin
}

// runLocalVerify runs the experiment cfg, returning its history and the
// run's log.
func runLocalVerify(t *testing.T, cfg *Config) (*verify.History, *bytes.Buffer) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	h, err := Run(ctx, cfg, &logs)
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, logs.String())
	}
	return h, &logs
}

// freeBasePort reserves a base port whose client and controller ports
// (base+100*i and +1) are free on every node's and proxy's address, for
// the whole test (see internal/testport for why reserving matters).
func freeBasePort(t *testing.T) int {
	t.Helper()
	var offsets []int
	hosts := []string{proxyHost}
	for i := range LocalBrokers {
		offsets = append(offsets, 100*i, 100*i+1, 100*i+2)
		hosts = append(hosts, nodeHost(i))
	}
	return testport.Block(t, offsets, testport.FreeOn(hosts...))
}

func TestSourceNameTellsNodesAndClientsApart(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		want string
	}{
		{"127.0.1.1", "n1"}, {"127.0.1.3", "n3"}, {"127.0.2.7", "p7"}, {"127.0.3.2", "c2"}, {"127.0.4.2", "x2"},
		{"127.0.0.1", otherSource}, {"10.0.1.1", otherSource}, {"127.0.1.0", otherSource}, {"::1", otherSource},
	} {
		if got := sourceName(&net.TCPAddr{IP: net.ParseIP(tt.ip), Port: 5000}); got != tt.want {
			t.Errorf("sourceName(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
	if got := sourceName(&net.UnixAddr{Name: "x"}); got != otherSource {
		t.Errorf("a unix address is named %q", got)
	}
	if nodeHost(0) != "127.0.1.1" || sourceName(&net.TCPAddr{IP: net.ParseIP(nodeHost(2))}) != nodeName(2) {
		t.Error("nodeHost and sourceName disagree")
	}
}

func TestDamageSegment(t *testing.T) {
	dir := t.TempDir()
	first := bytes.Repeat([]byte{0xaa}, 100)
	last := bytes.Repeat([]byte{0xbb}, 90)
	for name, data := range map[string][]byte{"00000000000000000000.log": first, "00000000000000000042.log": last, "00000000000000000000.index": {1, 2}} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := damageSegment(dir, false); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.log"))
	diff := 0
	for i := range got {
		if got[i] != first[i] {
			diff++
		}
	}
	if len(got) != len(first) || diff != 1 {
		t.Fatalf("flip: the oldest segment has %d bytes, %d changed; want %d bytes, 1 changed", len(got), diff, len(first))
	}
	if _, err := damageSegment(dir, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "00000000000000000042.log")); len(got) != 60 {
		t.Fatalf("truncate: the newest segment has %d bytes, want 60", len(got))
	}
	if _, err := damageSegment(t.TempDir(), false); err == nil {
		t.Fatal("an empty directory was damaged")
	}

	// A killed broker's active segment ending in its zero-filled
	// window: the damage lands on the batches' bytes, not on the zeros.
	windowed := t.TempDir()
	data := append(bytes.Repeat([]byte{0xcc}, 100), make([]byte, 1000)...)
	path := filepath.Join(windowed, "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := damageSegment(windowed, false); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if i := slices.IndexFunc(got[:100], func(c byte) bool { return c != 0xcc }); i < 0 || !bytes.Equal(got[100:], data[100:]) {
		t.Fatalf("flip in a windowed segment: changed byte at %d, zeros intact %v", i, bytes.Equal(got[100:], data[100:]))
	}
	if _, err := damageSegment(windowed, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != 67 {
		t.Fatalf("truncate of a windowed segment: %d bytes left, want 67 (a third of the batches' 100 cut)", len(got))
	}
}

// TestVerifyLocalClusterTxn is TestVerifyLocalCluster for the txn
// workload: transactional producers, read_committed consumers and the
// consume-transform-produce chain under the same faults, judged by
// verify.CheckTxn. Asked for like it:
// SKEINTEST_VERIFY=1 go test ./internal/chaos -run TestVerifyLocalClusterTxn
func TestVerifyLocalClusterTxn(t *testing.T) {
	if testing.Short() || os.Getenv("SKEINTEST_VERIFY") != "1" {
		t.Skip("set SKEINTEST_VERIFY=1 (and no -short) to run verify against a local cluster")
	}
	bin := buildSkein(t)
	out := t.TempDir()
	kinds, err := ParseNemesis(ciVerifyNemesis)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Workload: verify.WorkloadTxn, Duration: ciVerifyDuration, Seed: ciVerifySeed, Nemesis: kinds, NemesisName: ciVerifyNemesis,
		Acks: verify.AcksAll, Idempotent: true, Partitions: 3, ReplicationFactor: 3, MinInsync: 2, Producers: 3, Consumers: 2,
		Rate: 100, Out: out, Port: freeBasePort(t), Brokers: LocalBrokers, Topic: fmt.Sprintf("verify-txn-%d", ciVerifySeed),
		DrainTimeout: time.Minute, Bin: bin, Transformers: Transformers}
	cfg.ChainGroup, cfg.OutputTopic = cfg.Topic+"-chain", cfg.Topic+"-out"
	h, logs := runLocalVerify(t, cfg)
	res := verify.CheckTxn(h)
	verdict := res.Verdict(h.Meta)
	t.Log(verdict)
	if !res.Valid || !h.Meta.DrainComplete || !h.Meta.ChainDrainComplete {
		t.Fatalf("verify found problems (data in %s):\n%s\n%s", out, verdict, logs.String())
	}
	// Both outcomes happened and were checked: commits read, aborts not;
	// the chain committed, aborted, had zombies fenced, and its committed
	// offsets were read back.
	if res.TxnCommitted == 0 || res.TxnAborted == 0 || res.ReadValues == 0 {
		t.Fatalf("too little traffic checked:\n%s", verdict)
	}
	if st := res.Chain; st == nil || st.Committed == 0 || st.Aborted == 0 || st.FencedEnds == 0 || st.Final == nil || st.Transformed == 0 {
		t.Fatalf("too little of the chain checked:\n%s", verdict)
	}
	if err := Report(cfg, h, logs); err != nil {
		t.Fatalf("report: %v", err)
	}
}
