package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

// verifyBrokerOverrides shorten the local brokers' failure detection from
// Kafka's defaults (9 s sessions, 30 s replica lag), so that a minute of
// faults holds many fencings, elections and ISR changes rather than a few.
var verifyBrokerOverrides = map[string]string{
	"broker.heartbeat.interval.ms": "250",
	"broker.session.timeout.ms":    "3000",
	"replica.lag.time.max.ms":      "3000",
	"replica.fetch.wait.max.ms":    "100",
	// The group members join at once: no waiting for more to come.
	"group.initial.rebalance.delay.ms": "0",
	// Small segments roll every few seconds under the workload, so a run
	// holds sealed segments below the recovery point (for the corrupt
	// fault) and active ones that pass the disk-full limit.
	"log.segment.bytes": strconv.Itoa(verifySegmentBytes),
}

// verifySegmentBytes is the local brokers' log.segment.bytes.
const verifySegmentBytes = 256 << 10

// runVerifyWorkload runs the whole experiment and returns its history:
// cluster up, topic created, consumers and producers started, faults for
// cfg.duration, then heal, flush the producers and drain the consumers.
func runVerifyWorkload(ctx context.Context, cfg *verifyConfig, s streams) (*verify.History, error) {
	started := time.Now()
	rec := newRecorder(started, maxVerifyEvents)
	seeds := splitList(cfg.bootstrap)
	var driver faultDriver
	var local *nemesis // the local cluster's driver, when there is one
	meta := verify.Meta{Topic: cfg.topic, Partitions: cfg.partitions, Producers: cfg.producers, Consumers: cfg.consumers,
		GroupMembers: cfg.groupMembers, Group: cfg.group,
		Acks: cfg.acks, Idempotent: cfg.idempotent, Seed: cfg.seed, Nemesis: cfg.nemesisName, Duration: cfg.duration,
		Started: started.UTC(), Cluster: cfg.bootstrap}
	if cfg.bootstrap == "" {
		c, vn, err := startVerifyCluster(ctx, cfg, s)
		if vn != nil {
			defer vn.net.Close() // after stopAll (deferred later, so run earlier)
		}
		if c != nil {
			defer c.stopAll()
		}
		if err != nil {
			return nil, err
		}
		seeds = c.addrs()
		meta.Cluster = fmt.Sprintf("local, %d brokers behind fault proxies on %s, data in %s", c.n, strings.Join(seeds, ","), c.dataDir)
		local = newNemesis(c, vn, rec, cfg, s.err)
		driver = local
		defer local.heal() // before stopAll (deferred earlier, so run later): a paused broker cannot stop
	}
	if cfg.compose != "" {
		cn, err := newComposeNemesis(ctx, cfg.compose, seeds, rec, cfg, s.err)
		if err != nil {
			return nil, err
		}
		driver = cn
		defer cn.heal()
		meta.Cluster = fmt.Sprintf("Compose project %s (%d brokers) at %s", cfg.compose, cn.brokers(), cfg.bootstrap)
	}
	fmt.Fprintf(s.err, "verify: seed %d, topic %s, cluster %s, output in %s\n", cfg.seed, cfg.topic, meta.Cluster, cfg.out)
	if err := createVerifyTopic(ctx, cfg, seeds); err != nil {
		return nil, err
	}

	prog := newProgress()
	consumerCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var consumers sync.WaitGroup
	consumerErrs := make(chan error, cfg.consumers+cfg.groupMembers)
	// Group members are numbered after the assigned consumers, and dial
	// from the consumers' network like them.
	for id := 1; id <= cfg.consumers+cfg.groupMembers; id++ {
		consumers.Go(func() {
			var dial []kgo.Opt
			if local != nil {
				dial = append(dial, clientDialer(consumerNet+strconv.Itoa(id)))
			}
			run := runConsumer
			if id > cfg.consumers {
				run = runGroupMember
			}
			if err := run(consumerCtx, id, cfg, seeds, rec, prog, dial...); err != nil {
				consumerErrs <- err
			}
		})
	}
	producers := make([]*verifyProducer, 0, cfg.producers)
	for id := 1; id <= cfg.producers; id++ {
		var dial []kgo.Opt
		if local != nil {
			dial = append(dial, clientDialer(producerNet+strconv.Itoa(id)))
		}
		p, err := newVerifyProducer(id, cfg, seeds, rec, dial...)
		if err != nil {
			for _, q := range producers {
				q.cl.Close()
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
	faultWindowEnd := time.Now().Add(cfg.duration)
	if driver != nil && len(cfg.nemesis) > 0 {
		plan := planFaults(cfg.seed, cfg.duration, cfg.nemesis, driver.brokers())
		fmt.Fprintf(s.err, "verify: %d faults planned over %v\n", len(plan), cfg.duration)
		if err := driver.run(ctx, plan, faultWindowEnd); err != nil {
			close(stopProducing)
			return nil, fmt.Errorf("nemesis: %w", err)
		}
	}
	sleepCtx(ctx, time.Until(faultWindowEnd))

	rec.add(verify.Event{Type: verify.EventPhase, Note: "heal"})
	if driver != nil {
		if err := healAndWait(ctx, driver, cfg, seeds, s); err != nil {
			close(stopProducing)
			return nil, err
		}
	}
	close(stopProducing)
	sending.Wait()
	rec.add(verify.Event{Type: verify.EventPhase, Note: "flush"})
	fmt.Fprintf(s.err, "verify: producers stopped; waiting for their last answers\n")
	var flushing sync.WaitGroup
	for _, p := range producers {
		flushing.Go(func() { p.finish(flushTimeout) })
	}
	flushing.Wait()

	rec.add(verify.Event{Type: verify.EventPhase, Note: "drain"})
	meta.DrainComplete, meta.DrainNote = drainConsumers(ctx, cfg, seeds, prog, s)
	rec.add(verify.Event{Type: verify.EventPhase, Note: "done"})
	stopConsumers()
	consumers.Wait()
	close(consumerErrs)
	if err := <-consumerErrs; err != nil {
		return nil, err
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
		return nil, fmt.Errorf("the history outgrew %d events (%d dropped), so it cannot be checked: lower --rate or --duration", maxVerifyEvents, dropped)
	}
	return &verify.History{Meta: meta, Events: events}, nil
}

// startVerifyCluster starts the local brokers in <out>/cluster and waits
// until all registered. The cluster is returned (to be stopped) even when
// it failed to come up.
//
// Each broker listens on its own loopback address behind a fault proxy
// (see verify_network.go); the proxies listen where the cluster's
// addresses say, so clients and brokers reach each other only through them.
func startVerifyCluster(ctx context.Context, cfg *verifyConfig, s streams) (*devCluster, *verifyNetwork, error) {
	c := &devCluster{bin: cfg.bin, dataDir: filepath.Join(cfg.out, "cluster"), n: localBrokers, base: cfg.port, verbose: cfg.verbose,
		procs: make([]*exec.Cmd, localBrokers), exited: make([]chan struct{}, localBrokers), out: s.err, overrides: verifyBrokerOverrides}
	if err := os.MkdirAll(c.dataDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("local cluster data directory: %w", err)
	}
	for i := range c.n {
		for _, port := range []int{c.clientPort(i), c.ctrlPort(i)} {
			for _, host := range []string{proxyHost, nodeHost(i)} {
				if err := hostPortFree(host, port); err != nil {
					return nil, nil, fmt.Errorf("local cluster: %w; choose another --port", err)
				}
			}
		}
	}
	vn, err := startVerifyNetwork(c)
	if err != nil {
		return nil, nil, fmt.Errorf("local cluster: %w", err)
	}
	c.nodeProps = func(i int) map[string]string { return vn.nodeProps(c, i) }
	for i := range c.n {
		if err := c.start(i); err != nil {
			return c, vn, err
		}
	}
	readyCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	return c, vn, c.waitReady(readyCtx)
}

// hostPortFree checks that nothing listens on host:port.
func hostPortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s:%d is taken: %w", host, port, err)
	}
	return l.Close()
}

// createVerifyTopic creates the topic and waits until every partition has
// a leader and a full ISR, so the run starts from a healthy state.
func createVerifyTopic(ctx context.Context, cfg *verifyConfig, seeds []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	tctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	minISR := strconv.Itoa(cfg.minInsync)
	resp, err := kadm.NewClient(cl).CreateTopic(tctx, int32(cfg.partitions), int16(cfg.replicationFactor), map[string]*string{"min.insync.replicas": &minISR}, cfg.topic)
	if err == nil {
		err = withBrokerMessage(resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", cfg.topic, explainError(err))
	}
	return topicReady(tctx, seeds, cfg.topic, cfg.partitions, cfg.replicationFactor)
}

// topicReady waits until every partition of topic has a leader and
// replicas in sync. Each look uses a fresh client, whose metadata is
// fresh too.
func topicReady(ctx context.Context, seeds []string, topic string, partitions, rf int) error {
	return waitFor(ctx, "topic "+topic+" to have leaders and full ISRs", func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
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
func healAndWait(ctx context.Context, nem faultDriver, cfg *verifyConfig, seeds []string, s streams) error {
	fmt.Fprintf(s.err, "verify: healing the cluster\n")
	if err := nem.heal(); err != nil {
		return fmt.Errorf("heal: %w", err)
	}
	hctx, cancel := context.WithTimeout(ctx, healTimeout)
	defer cancel()
	if err := nem.waitWhole(hctx); err != nil {
		fmt.Fprintf(s.err, "verify: not every broker came back: %v\n", err)
		return nil
	}
	if err := topicReady(hctx, seeds, cfg.topic, cfg.partitions, cfg.replicationFactor); err != nil {
		fmt.Fprintf(s.err, "verify: the topic did not recover full ISRs: %v\n", err)
	}
	return nil
}

// drainConsumers reads the end offsets (the high watermarks, now that no
// one writes) and waits, bounded by --drain-timeout, until every consumer
// has read up to them. It reports whether they all did, and if not where
// they stopped.
func drainConsumers(ctx context.Context, cfg *verifyConfig, seeds []string, prog *progress, s streams) (bool, string) {
	ends, err := endOffsets(ctx, cfg, seeds)
	if err != nil {
		return false, err.Error()
	}
	fmt.Fprintf(s.err, "verify: draining consumers to end offsets %v\n", ends)
	dctx, cancel := context.WithTimeout(ctx, cfg.drainTimeout)
	defer cancel()
	for {
		behind := prog.behind(cfg.consumers, cfg.groupMembers > 0, ends)
		if len(behind) == 0 {
			return true, ""
		}
		select {
		case <-prog.changed:
		case <-dctx.Done():
			if len(behind) > maxDrainNotes {
				behind = append(behind[:maxDrainNotes], fmt.Sprintf("%d more", len(behind)-maxDrainNotes))
			}
			return false, fmt.Sprintf("after %v: %s", cfg.drainTimeout, strings.Join(behind, "; "))
		}
	}
}

// endOffsets asks for every partition's end offset until two answers
// endStableFor apart agree. The end offset is the high watermark, and with
// acks=1 a leader acknowledges records its followers have not copied yet:
// the high watermark goes on rising after the producers stop, and a drain
// to its first value would miss acknowledged records that are not lost.
func endOffsets(ctx context.Context, cfg *verifyConfig, seeds []string) (map[int32]int64, error) {
	ectx, cancel := context.WithTimeout(ctx, endOffsetsTimeout)
	defer cancel()
	var prev map[int32]int64
	err := waitFor(ectx, "end offsets to settle", func() bool {
		ends, err := endOffsetsOnce(ectx, cfg, seeds)
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
func endOffsetsOnce(ctx context.Context, cfg *verifyConfig, seeds []string) (map[int32]int64, error) {
	ectx, cancel := context.WithTimeout(ctx, endOffsetsTimeout)
	defer cancel()
	var ends map[int32]int64
	var last error
	err := waitFor(ectx, "end offsets", func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			last = err
			return false
		}
		defer cl.Close()
		listed, err := kadm.NewClient(cl).ListEndOffsets(ectx, cfg.topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			last = err
			return false
		}
		ends = map[int32]int64{}
		listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		if len(ends) != cfg.partitions {
			last = fmt.Errorf("%d of %d partitions listed", len(ends), cfg.partitions)
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", errors.Join(err, last))
	}
	return ends, nil
}
