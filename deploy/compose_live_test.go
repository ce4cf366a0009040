package deploy

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// composeLiveEnv turns on the live compose test: it needs Docker, builds
// the image and runs the whole replicated cluster, so it is opt-in.
// Not SKEIN_*: brokers started by other tests refuse unknown SKEIN_* variables.
const composeLiveEnv = "SKEINTEST_COMPOSE"

// Limits of the live test.
const (
	imageBuildTimeout = 5 * time.Minute
	clusterTimeout    = 4 * time.Minute // from "up" to the last check
	teardownTimeout   = 2 * time.Minute
	readyPollInterval = 250 * time.Millisecond
	probeTimeout      = 2 * time.Second
	recordsPerPhase   = 300
	liveTopic         = "compose-live"
	liveTopicParts    = 3
)

// composeProject runs compose commands against docker-compose.yml under a
// project name of its own, so that its containers, network and volumes
// never collide with a cluster someone started by hand.
type composeProject struct {
	command []string // "docker compose" or "docker-compose"
	name    string
}

func (p composeProject) run(ctx context.Context, args ...string) (string, error) {
	full := append(slices.Clone(p.command[1:]), "-p", p.name, "-f", composePath)
	full = append(full, args...)
	out, err := exec.CommandContext(ctx, p.command[0], full...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", p.command[0], strings.Join(full, " "), err, out)
	}
	return string(out), nil
}

// liveBroker is how the test reaches one compose broker from the host.
type liveBroker struct {
	service  string
	nodeID   int32
	kafka    string // advertised host-facing address
	readyURL string // /readyz on the published admin port
}

// liveBrokers reads the host-facing addresses from docker-compose.yml, so
// the test follows the file rather than repeating its ports.
func liveBrokers(t *testing.T) []liveBroker {
	t.Helper()
	_, brokers := loadCompose(t, composePath)
	var out []liveBroker
	for _, b := range brokers {
		lb := liveBroker{service: b.service, nodeID: b.cfg.NodeID}
		for _, a := range b.cfg.AdvertisedListeners {
			if a.Name != b.cfg.InterBrokerListenerName {
				lb.kafka = a.Addr()
			}
		}
		if lb.kafka == "" || len(b.cfg.AdminListeners) == 0 {
			t.Fatalf("service %s: no host-facing listener or no admin listener", b.service)
		}
		adminPort := b.published[b.cfg.AdminListeners[0].Port]
		lb.readyURL = "http://" + loopback + ":" + strconv.Itoa(adminPort) + "/readyz"
		out = append(out, lb)
	}
	return out
}

// TestComposeClusterSurvivesBrokerKill brings the compose cluster up, writes
// through it with acks=all, SIGKILLs the leader of a partition, keeps
// writing, and reads everything back: no acknowledged record lost or
// duplicated. Then the killed broker restarts and must become ready again.
func TestComposeClusterSurvivesBrokerKill(t *testing.T) {
	if os.Getenv(composeLiveEnv) != "1" {
		t.Skip("live docker compose test; set " + composeLiveEnv + "=1 to run it (needs Docker, builds " + composeImage + ")")
	}
	command := composeCommand()
	if command == nil {
		t.Fatal("neither docker compose nor docker-compose is installed")
	}
	brokers := liveBrokers(t)
	buildImage(t)

	project := composeProject{command: command, name: fmt.Sprintf("skeintest%d", os.Getpid())}
	t.Cleanup(func() { tearDown(t, project) })
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if _, err := project.run(ctx, "up", "-d"); err != nil {
		t.Fatalf("starting the cluster (are the published ports free?): %v", err)
	}
	for _, b := range brokers {
		waitReady(ctx, t, b)
	}

	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.kafka)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(liveTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Replication factor from the cluster default (-1): the compose file's 3.
	if _, err := adm.CreateTopic(ctx, liveTopicParts, -1, nil, liveTopic); err != nil {
		t.Fatalf("creating %s: %v", liveTopic, err)
	}

	produceRange(ctx, t, cl, 0, recordsPerPhase)
	victim := leaderOfPartitionZero(ctx, t, adm, brokers)
	t.Logf("killing %s (node %d), leader of %s-0", victim.service, victim.nodeID, liveTopic)
	if _, err := project.run(ctx, "kill", "-s", "SIGKILL", victim.service); err != nil {
		t.Fatal(err)
	}
	produceRange(ctx, t, cl, recordsPerPhase, 2*recordsPerPhase)
	consumeAll(ctx, t, seeds, 2*recordsPerPhase)

	if _, err := project.run(ctx, "start", victim.service); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, victim)
}

// buildImage builds skein:dev from the code under test.
// buildImage builds the image once per test process: both live tests run
// the same binary, and a second build only costs time on a loaded machine.
func buildImage(t *testing.T) {
	t.Helper()
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), imageBuildTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "bash", "build-image.sh", composeImage).CombinedOutput()
		if err != nil {
			imageErr = fmt.Errorf("build-image.sh: %w\n%s", err, out)
		}
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
}

var (
	imageOnce sync.Once
	imageErr  error
)

// tearDown removes the containers, network and volumes, first logging the
// brokers' output if the test failed.
func tearDown(t *testing.T, p composeProject) {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	if t.Failed() {
		logs, err := p.run(ctx, "logs", "--no-color", "--tail", "200")
		t.Logf("broker logs:\n%s%v", logs, err)
	}
	if _, err := p.run(ctx, "down", "-v", "--remove-orphans", "-t", "10"); err != nil {
		t.Errorf("tearing down: %v", err)
	}
}

// waitReady polls the broker's /readyz until it answers 200. Polling is
// the only way here: the container offers no readiness event to wait on,
// and this is the probe Kubernetes itself polls.
func waitReady(ctx context.Context, t *testing.T, b liveBroker) {
	t.Helper()
	client := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.readyURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never became ready at %s: %s", b.service, b.readyURL, last)
		case <-tick.C:
		}
	}
}

// produceRange writes records value-<i> for i in [from, to) with acks=all
// and fails on any record not acknowledged.
func produceRange(ctx context.Context, t *testing.T, cl *kgo.Client, from, to int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(liveValue(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing records %d..%d: %v", from, to-1, err)
	}
}

func liveValue(i int) string { return fmt.Sprintf("value-%06d", i) }

// leaderOfPartitionZero returns the broker leading partition 0 of the test
// topic: killing it forces a leader election and a client failover.
func leaderOfPartitionZero(ctx context.Context, t *testing.T, adm *kadm.Client, brokers []liveBroker) liveBroker {
	t.Helper()
	md, err := adm.Metadata(ctx, liveTopic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	p, ok := md.Topics[liveTopic].Partitions[0]
	if !ok || p.Err != nil {
		t.Fatalf("metadata of %s-0: %+v", liveTopic, p)
	}
	for _, b := range brokers {
		if b.nodeID == p.Leader {
			return b
		}
	}
	t.Fatalf("%s-0 is led by node %d, which is no compose service", liveTopic, p.Leader)
	return liveBroker{}
}

// consumeAll reads the topic from the start with a fresh client until want
// records arrived, then checks each value came exactly once.
func consumeAll(ctx context.Context, t *testing.T, seeds []string, want int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(liveTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := make(map[string]int, want)
	total := 0
	for total < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records before the deadline", total, want)
		}
		fetches.EachError(func(topic string, part int32, err error) {
			t.Logf("fetch %s-%d: %v (the client retries)", topic, part, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			total++
		})
	}
	for i := range want {
		if n := seen[liveValue(i)]; n != 1 {
			t.Errorf("%s read %d times, want once", liveValue(i), n)
		}
	}
	if total != want {
		t.Errorf("read %d records, want %d", total, want)
	}
}
