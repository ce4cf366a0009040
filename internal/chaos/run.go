package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/devcluster"
	"github.com/skein-log/skein/internal/verify"
)

// Phase bounds of a verify run.
const (
	clusterStartTimeout = 60 * time.Second
	topicReadyTimeout   = 60 * time.Second
	healTimeout         = 90 * time.Second
	flushTimeout        = 60 * time.Second
	endOffsetsTimeout   = 30 * time.Second
	// endStableFor is how long the end offsets must stay put to count as
	// the end.
	endStableFor = 500 * time.Millisecond
	// maxDrainNotes bounds how many lagging consumer partitions an
	// incomplete drain lists.
	maxDrainNotes = 5
)

// brokerOverrides shorten the local brokers' failure detection from
// Kafka's defaults (9 s sessions, 30 s replica lag), so that a minute of
// faults holds many fencings, elections and ISR changes rather than a few.
var brokerOverrides = map[string]string{
	"broker.heartbeat.interval.ms": "250",
	"broker.session.timeout.ms":    "3000",
	"replica.lag.time.max.ms":      "3000",
	"replica.fetch.wait.max.ms":    "100",
	// The group members join at once: no waiting for more to come.
	"group.initial.rebalance.delay.ms": "0",
	// Small segments roll every few seconds under the workload, so a run
	// holds sealed segments below the recovery point (for the corrupt
	// fault) and active ones that pass the disk-full limit.
	"log.segment.bytes": strconv.Itoa(segmentBytes),
}

// segmentBytes is the local brokers' log.segment.bytes.
const segmentBytes = 256 << 10

// Run runs the whole experiment and returns its history:
// cluster up, topic created, consumers and producers started, faults for
// cfg.Duration, then heal, flush the producers and drain the consumers.
func Run(ctx context.Context, cfg *Config, log io.Writer) (*verify.History, error) {
	started := time.Now()
	rec := newRecorder(started, maxEvents)
	seeds := seedList(cfg.Bootstrap)
	var driver faultDriver
	var local *nemesis // the local cluster's driver, when there is one
	meta := verify.Meta{Workload: cfg.Workload, Topic: cfg.Topic, Partitions: cfg.Partitions, Producers: cfg.Producers, Consumers: cfg.Consumers,
		GroupMembers: cfg.GroupMembers, Group: cfg.Group,
		Transformers: cfg.Transformers, ChainGroup: cfg.ChainGroup, OutputTopic: cfg.OutputTopic,
		Acks: cfg.Acks, Idempotent: cfg.Idempotent, Seed: cfg.Seed, Nemesis: cfg.NemesisName, Duration: cfg.Duration,
		Started: started.UTC(), Cluster: cfg.Bootstrap}
	if cfg.Bootstrap == "" {
		c, vn, err := startLocalCluster(ctx, cfg, log)
		if vn != nil {
			defer vn.net.Close() // after Stop (deferred later, so run earlier)
		}
		if c != nil {
			defer c.Stop(devcluster.StopGrace)
		}
		if err != nil {
			return nil, err
		}
		seeds = c.Addrs()
		meta.Cluster = fmt.Sprintf("local, %d brokers behind fault proxies on %s, data in %s", c.Brokers(), strings.Join(seeds, ","), c.Dir())
		local = newNemesis(c, vn, rec, cfg, log)
		driver = local
		defer local.heal() // before Stop (deferred earlier, so run later): a paused broker cannot stop
	}
	if cfg.Compose != "" {
		cn, err := newComposeNemesis(ctx, cfg.Compose, seeds, rec, cfg, log)
		if err != nil {
			return nil, err
		}
		driver = cn
		defer cn.heal()
		meta.Cluster = fmt.Sprintf("Compose project %s (%d brokers) at %s", cfg.Compose, cn.brokers(), cfg.Bootstrap)
	}
	fmt.Fprintf(log, "verify: seed %d, topic %s, cluster %s, output in %s\n", cfg.Seed, cfg.Topic, meta.Cluster, cfg.Out)
	if err := createVerifyTopic(ctx, cfg, seeds, cfg.Topic); err != nil {
		return nil, err
	}
	if cfg.Transformers > 0 {
		if err := createVerifyTopic(ctx, cfg, seeds, cfg.OutputTopic); err != nil {
			return nil, err
		}
	}

	prog := newProgress()
	consumerCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var consumers sync.WaitGroup
	consumerErrs := make(chan error, cfg.Consumers+cfg.GroupMembers)
	// Group members are numbered after the assigned consumers, and dial
	// from the consumers' network like them.
	for id := 1; id <= cfg.Consumers+cfg.GroupMembers; id++ {
		consumers.Go(func() {
			var dial []kgo.Opt
			if local != nil {
				dial = append(dial, clientDialer(consumerNet+strconv.Itoa(id)))
			}
			run := runConsumer
			if id > cfg.Consumers {
				run = runGroupMember
			}
			if err := run(consumerCtx, id, cfg, seeds, rec, prog, dial...); err != nil {
				consumerErrs <- err
			}
		})
	}
	var chain *chainStage
	if cfg.Transformers > 0 {
		chain = startChain(consumerCtx, cfg, seeds, rec, func(net string, id int) []kgo.Opt {
			if local == nil {
				return nil
			}
			return []kgo.Opt{clientDialer(net + strconv.Itoa(id))}
		})
	}
	producers := make([]workloadProducer, 0, cfg.Producers)
	for id := 1; id <= cfg.Producers; id++ {
		var dial []kgo.Opt
		if local != nil {
			dial = append(dial, clientDialer(producerNet+strconv.Itoa(id)))
		}
		var p workloadProducer
		var err error
		if cfg.Workload == verify.WorkloadTxn {
			p, err = newTxnProducer(id, cfg, seeds, rec, dial...)
		} else {
			p, err = newVerifyProducer(id, cfg, seeds, rec, dial...)
		}
		if err != nil {
			for _, q := range producers {
				q.close()
			}
			return nil, err
		}
		producers = append(producers, p)
	}
	// Records are produced under a context of their own: ending the run
	// early (Ctrl-C) must not fail in-flight records before their answers
	// arrive, or the history would claim failures that were not.
	produceCtx, abandon := context.WithCancel(context.Background())
	defer abandon()
	stopProducing := make(chan struct{})
	var sending sync.WaitGroup
	for _, p := range producers {
		sending.Go(func() { p.run(produceCtx, stopProducing) })
	}

	rec.add(verify.Event{Type: verify.EventPhase, Note: "faults"})
	faultWindowEnd := time.Now().Add(cfg.Duration)
	if driver != nil && len(cfg.Nemesis) > 0 {
		plan := PlanFaults(cfg.Seed, cfg.Duration, cfg.Nemesis, driver.brokers())
		fmt.Fprintf(log, "verify: %d faults planned over %v\n", len(plan), cfg.Duration)
		if err := driver.run(ctx, plan, faultWindowEnd); err != nil {
			close(stopProducing)
			return nil, fmt.Errorf("nemesis: %w", err)
		}
	}
	if !sleepCtx(ctx, time.Until(faultWindowEnd)) {
		// Interrupted (Ctrl-C): the history will not be judged, so nothing
		// is waited for; what is deferred heals and stops the cluster.
		if local != nil {
			local.stopping = true
		}
		close(stopProducing)
		abandon()
		sending.Wait()
		for _, p := range producers {
			p.close()
		}
		stopConsumers()
		consumers.Wait()
		if chain != nil {
			chain.abandon()
		}
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}

	rec.add(verify.Event{Type: verify.EventPhase, Note: "heal"})
	if driver != nil {
		if err := healAndWait(ctx, driver, cfg, seeds, log); err != nil {
			close(stopProducing)
			return nil, err
		}
	}
	close(stopProducing)
	sending.Wait()
	rec.add(verify.Event{Type: verify.EventPhase, Note: "flush"})
	fmt.Fprintf(log, "verify: producers stopped; waiting for their last answers\n")
	var flushing sync.WaitGroup
	for _, p := range producers {
		flushing.Go(func() { p.finish(flushTimeout) })
	}
	flushing.Wait()

	rec.add(verify.Event{Type: verify.EventPhase, Note: "drain"})
	meta.DrainComplete, meta.DrainNote = drainConsumers(ctx, cfg, seeds, prog, log)
	if chain != nil {
		rec.add(verify.Event{Type: verify.EventPhase, Note: "chain drain"})
		chain.finish(ctx, prog.dataEnds(), &meta, log)
	}
	rec.add(verify.Event{Type: verify.EventPhase, Note: "done"})
	stopConsumers()
	consumers.Wait()
	close(consumerErrs)
	if err := <-consumerErrs; err != nil {
		return nil, err
	}
	if chain != nil {
		if err := chain.err(); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if local != nil && local.vn != nil {
		meta.Connections = map[string]int{}
		for l, count := range local.vn.net.Seen() {
			meta.Connections[l.String()] = count
		}
	}
	events, dropped := rec.snapshot()
	if dropped > 0 {
		return nil, fmt.Errorf("the history outgrew %d events (%d dropped), so it cannot be checked: lower --rate or --duration", maxEvents, dropped)
	}
	return &verify.History{Meta: meta, Events: events}, nil
}

// workloadProducer is one producer of the workload: plain
// (verifyProducer) or transactional (txnProducer).
type workloadProducer interface {
	// run produces until stop is closed; produceCtx ends only to abandon
	// what is unanswered.
	run(produceCtx context.Context, stop <-chan struct{})
	// finish waits, bounded, for the last answers and closes the client.
	finish(timeout time.Duration)
	close()
}

// startLocalCluster starts the local brokers in <out>/cluster and waits
// until all registered. The cluster is returned (to be stopped) even when
// it failed to come up.
//
// Each broker listens on its own loopback address behind a fault proxy
// (see network.go); the proxies listen where the cluster's addresses
// say, so clients and brokers reach each other only through them.
func startLocalCluster(ctx context.Context, cfg *Config, log io.Writer) (*devcluster.Cluster, *faultNetwork, error) {
	ports := devcluster.BasePorts(cfg.Port)
	dcfg := devcluster.Config{Bin: cfg.Bin, Dir: filepath.Join(cfg.Out, "cluster"), Brokers: cfg.Brokers, Ports: ports, Props: debugBrokerProps(cfg)}
	if cfg.BrokerOutput != nil {
		dcfg.Output = func(int) io.Writer { return cfg.BrokerOutput }
	}
	for i := range cfg.Brokers {
		for _, port := range []int{ports(i).Client, ports(i).Controller} {
			for _, host := range []string{proxyHost, nodeHost(i)} {
				if err := devcluster.PortFree(host, port); err != nil {
					return nil, nil, fmt.Errorf("local cluster: %w; choose another --port", err)
				}
			}
		}
	}
	vn, err := startFaultNetwork(ports, cfg.Brokers)
	if err != nil {
		return nil, nil, fmt.Errorf("local cluster: %w", err)
	}
	dcfg.NodeProps = func(i int) map[string]string { return vn.nodeProps(i, ports(i)) }
	c, err := devcluster.New(dcfg)
	if err != nil {
		return nil, vn, err
	}
	cfg.adminAddrs = c.AdminAddrs()
	fmt.Fprintf(log, "verify: local brokers' admin (/metrics, /readyz) on %s\n", strings.Join(c.AdminAddrs(), ","))
	// The proxies hold the client and controller ports on 127.0.0.1 now;
	// the admin ports are the brokers' own.
	for i := range cfg.Brokers {
		if err := devcluster.PortFree("127.0.0.1", ports(i).Admin); err != nil {
			return nil, vn, fmt.Errorf("local cluster: %w; choose another --port", err)
		}
	}
	for i := range cfg.Brokers {
		if err := c.Start(i); err != nil {
			return c, vn, err
		}
	}
	readyCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	return c, vn, c.WaitReady(readyCtx)
}

// createVerifyTopic creates topic (the run's, or the chain's output) and
// waits until every partition has a leader and a full ISR, so the run
// starts from a healthy state.
func createVerifyTopic(ctx context.Context, cfg *Config, seeds []string, topic string) error {
	cl, err := kgo.NewClient(cfg.clientOpts(seeds)...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	tctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	minISR := strconv.Itoa(cfg.MinInsync)
	resp, err := kadm.NewClient(cl).CreateTopic(tctx, int32(cfg.Partitions), int16(cfg.ReplicationFactor), map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil && resp.Err != nil {
		err = fmt.Errorf("%w (broker: %s)", resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return topicReady(tctx, cfg.clientOpts(seeds), topic, cfg.Partitions, cfg.ReplicationFactor)
}

// topicReady waits until every partition of topic has a leader and
// replicas in sync. Each look uses a fresh client, whose metadata is
// fresh too.
func topicReady(ctx context.Context, opts []kgo.Opt, topic string, partitions, rf int) error {
	return devcluster.WaitFor(ctx, "topic "+topic+" to have leaders and full ISRs", func() bool {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return false
		}
		defer cl.Close()
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		md, err := kadm.NewClient(cl).Metadata(attempt, topic)
		if err != nil {
			return false
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) != partitions {
			return false
		}
		for _, pd := range td.Partitions {
			if pd.Err != nil || pd.Leader < 0 || len(pd.ISR) < rf {
				return false
			}
		}
		return true
	})
}

// healAndWait ends every fault and waits, bounded, for the cluster to be
// whole again. Not getting there is noted, not fatal: the drain and the
// checker show what it cost.
func healAndWait(ctx context.Context, nem faultDriver, cfg *Config, seeds []string, log io.Writer) error {
	fmt.Fprintf(log, "verify: healing the cluster\n")
	if err := nem.heal(); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, healTimeout)
	defer cancel()
	if err := nem.waitWhole(hctx); err != nil {
		fmt.Fprintf(log, "verify: not every broker came back: %v\n", err)
		return nil
	}
	for _, topic := range []string{cfg.Topic, cfg.OutputTopic} {
		if topic == "" {
			continue
		}
		if err := topicReady(hctx, cfg.clientOpts(seeds), topic, cfg.Partitions, cfg.ReplicationFactor); err != nil {
			fmt.Fprintf(log, "verify: topic %s did not recover full ISRs: %v\n", topic, err)
		}
	}
	return nil
}

// drainConsumers reads the end offsets (the high watermarks, now that no
// one writes) and waits, bounded by --drain-timeout, until every consumer
// has read up to them. It reports whether they all did, and if not where
// they stopped.
func drainConsumers(ctx context.Context, cfg *Config, seeds []string, prog *progress, log io.Writer) (bool, string) {
	return drainTopic(ctx, cfg, seeds, cfg.Topic, prog, cfg.Consumers, cfg.GroupMembers > 0, log)
}

// drainTopic waits like drainConsumers for the consumers of topic (and
// the group, when group) tracked by prog.
func drainTopic(ctx context.Context, cfg *Config, seeds []string, topic string, prog *progress, consumers int, group bool, log io.Writer) (bool, string) {
	ends, err := endOffsets(ctx, cfg, seeds, topic)
	if err != nil {
		return false, err.Error()
	}
	fmt.Fprintf(log, "verify: draining consumers of %s to end offsets %v\n", topic, ends)
	dctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	for {
		behind := prog.behind(consumers, group, ends)
		if len(behind) == 0 {
			return true, ""
		}
		select {
		case <-prog.changed:
		case <-dctx.Done():
			if len(behind) > maxDrainNotes {
				behind = append(behind[:maxDrainNotes], fmt.Sprintf("%d more", len(behind)-maxDrainNotes))
			}
			return false, fmt.Sprintf("after %v: %s", cfg.DrainTimeout, strings.Join(behind, "; "))
		}
	}
}

// endOffsets asks for every partition's end offset until two answers
// endStableFor apart agree. The end offset is the high watermark, and with
// acks=1 a leader acknowledges records its followers have not copied yet:
// the high watermark goes on rising after the producers stop, and a drain
// to its first value would miss acknowledged records that are not lost.
func endOffsets(ctx context.Context, cfg *Config, seeds []string, topic string) (map[int32]int64, error) {
	ectx, cancel := context.WithTimeout(ctx, endOffsetsTimeout)
	defer cancel()
	var prev map[int32]int64
	err := devcluster.WaitFor(ectx, "end offsets to settle", func() bool {
		ends, err := endOffsetsOnce(ectx, cfg, seeds, topic)
		if err != nil {
			return false
		}
		if maps.Equal(prev, ends) {
			return true
		}
		prev = ends
		return !sleepCtx(ectx, endStableFor) // ends: the wait reports the timeout
	})
	if err != nil {
		return nil, err
	}
	return prev, nil
}

// endOffsetsOnce asks for every partition's end offset, retrying while
// leaders settle.
func endOffsetsOnce(ctx context.Context, cfg *Config, seeds []string, topic string) (map[int32]int64, error) {
	ectx, cancel := context.WithTimeout(ctx, endOffsetsTimeout)
	defer cancel()
	var ends map[int32]int64
	var last error
	err := devcluster.WaitFor(ectx, "end offsets", func() bool {
		cl, err := kgo.NewClient(cfg.clientOpts(seeds)...)
		if err != nil {
			last = err
			return false
		}
		defer cl.Close()
		listed, err := kadm.NewClient(cl).ListEndOffsets(ectx, topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			last = err
			return false
		}
		ends = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		if len(ends) != cfg.Partitions {
			last = fmt.Errorf("%d of %d partitions listed", len(ends), cfg.Partitions)
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", errors.Join(err, last))
	}
	return ends, nil
}
