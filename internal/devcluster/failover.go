package devcluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FailoverTopic is the topic MeasureFailover creates (1 partition, RF=3,
// min.insync.replicas=2) and writes to.
const FailoverTopic = "failover-bench"

// steadyBeforeKill is how long the producer writes before each kill, and
// how old its last metadata refresh must be by then: longer than
// franz-go's MetadataMinAge (5 s), before which franz-go refreshes again
// only on a timer, whatever the cluster answers. A failover can leave
// such a refresh behind (a produce retry that failed while the first
// refresh was under way asks for another, which runs 5 s after that
// one), so the steady writing lasts until the refresh is that old too;
// otherwise one kill's number would measure the previous kill's client
// timer rather than the cluster.
const steadyBeforeKill = 6 * time.Second

// FailoverProducer is the client MeasureFailover drives: one long-lived
// producer with the client library's default settings, as an
// application would have.
type FailoverProducer interface {
	// Produce writes value to partition 0 of FailoverTopic and returns
	// once the write is acknowledged (the client's default acks, which
	// is all for franz-go and librdkafka) or has failed.
	Produce(ctx context.Context, value []byte) error
	// SinceMetadata is how long ago the client last read a Metadata
	// answer; a client that cannot tell returns a very long time.
	SinceMetadata() time.Duration
	// Steady is how long the producer writes steadily before each kill:
	// at least steadyBeforeKill, longer for a client whose state from
	// one kill would otherwise carry into the next (librdkafka's
	// reconnect backoff).
	Steady() time.Duration
	Close()
}

// NewFailoverProducer makes the producer MeasureFailover drives against
// the cluster's bootstrap addresses.
type NewFailoverProducer func(c *Cluster) (FailoverProducer, error)

// metadataSeen records when the client last read a Metadata answer.
type metadataSeen struct{ at atomic.Int64 }

var _ kgo.HookBrokerRead = (*metadataSeen)(nil)

func (m *metadataSeen) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Metadata) && err == nil {
		m.at.Store(time.Now().UnixNano())
	}
}

func (m *metadataSeen) since() time.Duration { return time.Since(time.Unix(0, m.at.Load())) }

// franzProducer is a franz-go client with default settings but for the
// default topic and a manual partitioner (every record to partition 0).
type franzProducer struct {
	cl   *kgo.Client
	seen *metadataSeen
}

// FranzFailoverProducer is the franz-go FailoverProducer; opts come after
// the measurement's own (a debug logger, say).
func FranzFailoverProducer(opts ...kgo.Opt) NewFailoverProducer {
	return func(c *Cluster) (FailoverProducer, error) {
		seen := &metadataSeen{}
		cl, err := c.Client(append([]kgo.Opt{kgo.DefaultProduceTopic(FailoverTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(seen)}, opts...)...)
		if err != nil {
			return nil, err
		}
		return &franzProducer{cl: cl, seen: seen}, nil
	}
}

func (p *franzProducer) Produce(ctx context.Context, value []byte) error {
	return p.cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: value}).FirstErr()
}

func (p *franzProducer) SinceMetadata() time.Duration { return p.seen.since() }
func (p *franzProducer) Steady() time.Duration        { return steadyBeforeKill }
func (p *franzProducer) Close()                       { p.cl.Close() }

// MeasureFailover kills the leader of a replicated partition runs times
// and reports, for each, the time from the kill -9 to the first acks=all
// write acknowledged by the new leader, as the producer newProducer makes
// sees it. It ends early when ctx does (Ctrl-C).
func (c *Cluster) MeasureFailover(ctx context.Context, runs int, newProducer NewFailoverProducer, out io.Writer) error {
	if c.cfg.Brokers < 3 {
		return fmt.Errorf("measuring failover needs at least 3 brokers")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(runs)*90*time.Second)
	defer cancel()
	admCl, err := c.Client()
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	two := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, FailoverTopic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	// One long-lived producer, as an application would have: its
	// metadata is as old as its last refresh, not fresh from a warm-up
	// (franz-go refreshes at most every MetadataMinAge, 5 s).
	p, err := newProducer(c)
	if err != nil {
		return err
	}
	defer p.Close()
	var times []time.Duration
	for run := 0; run < runs; run++ {
		var leader int32
		var isr []int32
		if err := WaitFor(ctx, "a full ISR", func() bool {
			leader, _, isr, err = c.PartitionState(ctx, FailoverTopic, 0)
			return err == nil && leader > 0 && len(isr) == 3
		}); err != nil {
			return err
		}
		// The producer writes steadily to the current leader when it dies,
		// and has done so (and last refreshed its metadata) longer ago
		// than franz-go's MetadataMinAge (5 s): a client that refreshed
		// metadata moments ago may not refresh again before then,
		// whatever the cluster does.
		for steady := time.Now(); time.Since(steady) < max(steadyBeforeKill, p.Steady()) || p.SinceMetadata() < steadyBeforeKill; {
			if err := p.Produce(ctx, []byte("before-kill-"+strconv.Itoa(run))); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond) // the steady workload's pace
		}
		killedAt := time.Now()
		c.Kill(int(leader) - 1)
		err = p.Produce(ctx, []byte("after-kill-"+strconv.Itoa(run)))
		took := time.Since(killedAt)
		if err != nil {
			return fmt.Errorf("run %d: produce after killing broker %d: %w", run+1, leader, err)
		}
		times = append(times, took)
		fmt.Fprintf(out, "run %d: killed broker %d at %s, first acks=all write acknowledged after %v\n",
			run+1, leader, killedAt.UTC().Format("15:04:05.000"), took.Round(time.Millisecond))
		if err := c.Start(int(leader) - 1); err != nil {
			return err
		}
	}
	slices.Sort(times)
	fmt.Fprintf(out, "failover over %d kills: median %v, max %v, min %v\n", len(times),
		times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), times[0].Round(time.Millisecond))
	return nil
}
