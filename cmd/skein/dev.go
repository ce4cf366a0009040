package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	commands["dev"] = command{summary: "run a local cluster on 127.0.0.1 (3 brokers by default), optionally with a failover demo", run: runDev}
}

// devCluster is a local cluster of `skein server` processes.
type devCluster struct {
	bin     string
	dataDir string
	n       int
	// controllers, if positive, is how many dedicated controller-only
	// nodes run besides the n brokers (then broker-only); 0 makes every
	// broker a controller too. Controllers take the node ids after the
	// brokers'.
	controllers int
	base        int
	verbose     bool
	procs       []*exec.Cmd
	exited      []chan struct{} // closed when broker i's process has been reaped
	out         io.Writer
	// overrides are server properties set over the defaults start uses
	// (verify shortens session and lag timeouts to see more faults).
	overrides map[string]string
	// nodeProps, when set, gives properties of broker i set over those
	// (verify puts each broker behind fault proxies).
	nodeProps func(i int) map[string]string
}

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	dataDir := fs.String("data", "", "data directory (default: a fresh temporary directory)")
	brokers := fs.Int("brokers", 3, "number of brokers (each also a controller unless --controllers is set)")
	controllers := fs.Int("controllers", 0, "number of dedicated controller-only nodes (node ids after the brokers'); 0: every broker is also a controller")
	base := fs.Int("port", 9092, "client port of broker 1; broker N listens on port+100*(N-1), its controller on that +1")
	demo := fs.Bool("demo", false, "run the replication and failover demo, then stop")
	failovers := fs.Int("failover-runs", 0, "measure failover: kill the leader this many times and report the time to the first acks=all write acknowledged by the new leader")
	verbose := fs.Bool("v", false, "show broker logs on stderr (they always go to <data>/broker-N.log)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *brokers < 1 || *brokers > 9 {
		return errors.New("--brokers must be between 1 and 9")
	}
	if *controllers < 0 || *brokers+*controllers > 9 {
		return errors.New("--controllers must be at least 0, and brokers plus controllers at most 9")
	}
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "skein-dev-")
		if err != nil {
			return err
		}
		*dataDir = d
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	nodes := *brokers + *controllers
	c := &devCluster{bin: bin, dataDir: *dataDir, n: *brokers, controllers: *controllers, base: *base, verbose: *verbose,
		procs: make([]*exec.Cmd, nodes), exited: make([]chan struct{}, nodes), out: os.Stdout}
	defer c.stopAll()
	for i := range nodes {
		if err := c.start(i); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	err = c.waitReady(ctx)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "skein dev: %d brokers on %s, data in %s\n", c.n, strings.Join(c.addrs(), ","), c.dataDir)
	if c.controllers > 0 {
		fmt.Fprintf(c.out, "skein dev: %d dedicated controllers, node ids %d-%d\n", c.controllers, c.n+1, c.n+c.controllers)
	}
	switch {
	case *failovers > 0:
		return c.measureFailover(*failovers)
	case *demo:
		return c.demo()
	}
	fmt.Fprintln(c.out, "press Ctrl-C to stop")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	return nil
}

func (c *devCluster) clientPort(i int) int { return c.base + 100*i }
func (c *devCluster) ctrlPort(i int) int   { return c.base + 100*i + 1 }

func (c *devCluster) addrs() []string {
	out := make([]string, c.n)
	for i := range c.n {
		out[i] = "127.0.0.1:" + strconv.Itoa(c.clientPort(i))
	}
	return out
}

func (c *devCluster) start(i int) error {
	// Voters are every node, or only the dedicated controllers.
	first, roles := 0, "broker,controller"
	listeners := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", c.clientPort(i), c.ctrlPort(i))
	if c.controllers > 0 {
		first = c.n
		if i < c.n {
			roles, listeners = "broker", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", c.clientPort(i))
		} else {
			roles, listeners = "controller", fmt.Sprintf("CONTROLLER://127.0.0.1:%d", c.ctrlPort(i))
		}
	}
	var voters []string
	for j := first; j < c.n+c.controllers; j++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", j+1, c.ctrlPort(j)))
	}
	rf := min(3, c.n)
	props := map[string]string{
		"node.id":                          strconv.Itoa(i + 1),
		"process.roles":                    roles,
		"cluster.id":                       "skein-dev",
		"listeners":                        listeners,
		"controller.quorum.voters":         strings.Join(voters, ","),
		"log.dirs":                         filepath.Join(c.dataDir, fmt.Sprintf("broker-%d", i+1)),
		"default.replication.factor":       strconv.Itoa(rf),
		"min.insync.replicas":              strconv.Itoa(max(1, rf-1)),
		"offsets.topic.replication.factor": strconv.Itoa(rf),
		"log.level":                        "info",
	}
	maps.Copy(props, c.overrides)
	if c.nodeProps != nil {
		maps.Copy(props, c.nodeProps(i))
	}
	args := []string{"server"}
	for k, v := range props {
		args = append(args, "--override", k+"="+v)
	}
	cmd := exec.Command(c.bin, args...)
	logFile, err := os.OpenFile(filepath.Join(c.dataDir, fmt.Sprintf("broker-%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if c.verbose {
		cmd.Stderr = io.MultiWriter(logFile, os.Stderr)
	} else {
		cmd.Stderr = logFile
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start broker %d: %w", i+1, err)
	}
	c.procs[i] = cmd
	exited := make(chan struct{})
	c.exited[i] = exited
	go func() {
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	return nil
}

// kill sends SIGKILL: no flush, no controlled shutdown, sockets dropped.
func (c *devCluster) kill(i int) {
	if p := c.procs[i]; p != nil {
		p.Process.Kill()
		<-c.exited[i] // reaped by the goroutine start began
		c.procs[i] = nil
	}
}

func (c *devCluster) stopAll() {
	for _, p := range c.procs {
		if p != nil {
			p.Process.Signal(syscall.SIGTERM)
		}
	}
	for i, p := range c.procs {
		if p == nil {
			continue
		}
		select {
		case <-c.exited[i]:
		case <-time.After(45 * time.Second):
			p.Process.Kill()
		}
		c.procs[i] = nil
	}
}

func (c *devCluster) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs()...)}, opts...)...)
}

// waitReady waits until every broker is registered, as Metadata shows.
// Each attempt uses a fresh client: a client caches metadata, and an early
// answer lists only the brokers registered by then.
func (c *devCluster) waitReady(ctx context.Context) error {
	for {
		if c.brokersVisible(ctx) == c.n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster did not come up (see %s/broker-*.log): %w", c.dataDir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *devCluster) brokersVisible(ctx context.Context) int {
	cl, err := c.client()
	if err != nil {
		return 0
	}
	defer cl.Close()
	// A short deadline: the client retries refused connections until
	// its context ends.
	attempt, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(attempt)
	if err != nil {
		return 0
	}
	return len(md.Brokers)
}

// partitionState reads leader, epoch and ISR of a partition. It asks
// with a fresh client each time: a client's metadata cache may be seconds
// old, which would show a leader that is no longer one.
func (c *devCluster) partitionState(ctx context.Context, topic string, p int32) (leader, epoch int32, isr []int32, err error) {
	cl, err := c.client()
	if err != nil {
		return -1, -1, nil, err
	}
	defer cl.Close()
	attempt, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(attempt, topic)
	if err != nil {
		return -1, -1, nil, err
	}
	pd, ok := md.Topics[topic].Partitions[p]
	if !ok {
		return -1, -1, nil, fmt.Errorf("no partition %s/%d", topic, p)
	}
	return pd.Leader, pd.LeaderEpoch, pd.ISR, pd.Err
}

// waitFor polls the cluster's view until cond holds (bounded by ctx).
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// demoMetadataMinAge is the demo client's metadata refresh floor.
const demoMetadataMinAge = 250 * time.Millisecond

func (c *devCluster) demo() error {
	const topic = "demo"
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// franz-go refreshes metadata at most every 5 s by default
	// (MetadataMinAge); a client this fresh would show that floor instead
	// of the cluster's failover. 250 ms is close to the Java client, which
	// retries a refresh after retry.backoff.ms (100 ms).
	cl, err := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(demoMetadataMinAge))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rf := int16(min(3, c.n))
	minISR := strconv.Itoa(max(1, int(rf)-1))
	if _, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	var leader, epoch int32
	var isr []int32
	if err := waitFor(ctx, "a leader", func() bool {
		leader, epoch, isr, err = c.partitionState(ctx, topic, 0)
		return err == nil && leader > 0 && len(isr) == int(rf)
	}); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "created topic %q: replication factor %d, min.insync.replicas %s; partition 0 leader: broker %d (leader epoch %d), ISR %v\n", topic, rf, minISR, leader, epoch, isr)

	produce := func(from, to int) (acked int, firstAck time.Time, err error) {
		results := make(chan error, to-from)
		for i := from; i < to; i++ {
			cl.Produce(ctx, &kgo.Record{Partition: 0, Value: []byte("record-" + strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
				if err == nil && firstAck.IsZero() {
					firstAck = time.Now()
				}
				results <- err
			})
		}
		for i := from; i < to; i++ {
			if e := <-results; e == nil {
				acked++
			} else if err == nil {
				err = e
			}
		}
		return acked, firstAck, err
	}
	acked, _, err := produce(0, 1000)
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	fmt.Fprintf(c.out, "produced %d records with acks=all (idempotent)\n", acked)

	killed := leader
	fmt.Fprintf(c.out, "killing broker %d (kill -9) ...\n", killed)
	killedAt := time.Now()
	c.kill(int(killed) - 1)
	acked2, firstAck, err := produce(1000, 2000)
	if err != nil {
		return fmt.Errorf("produce after the kill: %w", err)
	}
	if err := waitFor(ctx, "a new leader", func() bool {
		leader, epoch, isr, err = c.partitionState(ctx, topic, 0)
		return err == nil && leader > 0 && leader != killed
	}); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "new leader of partition 0: broker %d (leader epoch %d), ISR %v; first write acknowledged %v after the kill (client metadata refresh floor %v); %d more records acknowledged\n",
		leader, epoch, isr, firstAck.Sub(killedAt).Round(time.Millisecond), demoMetadataMinAge, acked2)

	consumer, err := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer consumer.Close()
	seen := map[string]int{}
	for len(seen) < acked+acked2 {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read back %d of %d records: %w", len(seen), acked+acked2, ctx.Err())
		}
		fetches.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, n := range seen {
		if n != 1 {
			return fmt.Errorf("record %s read %d times", v, n)
		}
	}
	fmt.Fprintf(c.out, "read back all %d acknowledged records, each exactly once\n", len(seen))

	fmt.Fprintf(c.out, "restarting broker %d ...\n", killed)
	if err := c.start(int(killed) - 1); err != nil {
		return err
	}
	if err := waitFor(ctx, "the restarted broker to rejoin the ISR", func() bool {
		_, _, isr, err = c.partitionState(ctx, topic, 0)
		return err == nil && len(isr) == int(rf)
	}); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "broker %d caught up and rejoined the ISR %v\n", killed, isr)
	return nil
}
