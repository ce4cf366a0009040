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

// metadataSeen records when the client last read a Metadata answer.
type metadataSeen struct{ at atomic.Int64 }

var _ kgo.HookBrokerRead = (*metadataSeen)(nil)

func (m *metadataSeen) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Metadata) && err == nil {
		m.at.Store(time.Now().UnixNano())
	}
}

func (m *metadataSeen) since() time.Duration { return time.Since(time.Unix(0, m.at.Load())) }

// MeasureFailover kills the leader of a replicated partition runs times
// and reports, for each, the time from the kill -9 to the first acks=all
// write acknowledged by the new leader, as a producer with default
// settings sees it. It ends early when ctx does (Ctrl-C).
func (c *Cluster) MeasureFailover(ctx context.Context, runs int, out io.Writer) error {
	const topic = "failover-bench"
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
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	// One long-lived producer with default settings, as an application
	// would have: its metadata is as old as its last refresh, not fresh
	// from a warm-up (franz-go refreshes at most every MetadataMinAge, 5 s).
	seen := &metadataSeen{}
	cl, err := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithHooks(seen))
	if err != nil {
		return err
	}
	defer cl.Close()
	var times []time.Duration
	for run := 0; run < runs; run++ {
		var leader int32
		var isr []int32
		if err := WaitFor(ctx, "a full ISR", func() bool {
			leader, _, isr, err = c.PartitionState(ctx, topic, 0)
			return err == nil && leader > 0 && len(isr) == 3
		}); err != nil {
			return err
		}
		// The producer writes steadily to the current leader when it dies,
		// and has done so (and last refreshed its metadata) longer ago
		// than franz-go's MetadataMinAge (5 s): a client that refreshed
		// metadata moments ago may not refresh again before then,
		// whatever the cluster does.
		for steady := time.Now(); time.Since(steady) < steadyBeforeKill || seen.since() < steadyBeforeKill; {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("before-kill-" + strconv.Itoa(run))}).FirstErr(); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond) // the steady workload's pace
		}
		killedAt := time.Now()
		c.Kill(int(leader) - 1)
		err = cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("after-kill-" + strconv.Itoa(run))}).FirstErr()
		took := time.Since(killedAt)
		if err != nil {
			return fmt.Errorf("run %d: produce after killing broker %d: %w", run+1, leader, err)
		}
		times = append(times, took)
		fmt.Fprintf(out, "run %d: killed broker %d, first acks=all write acknowledged after %v\n", run+1, leader, took.Round(time.Millisecond))
		if err := c.Start(int(leader) - 1); err != nil {
			return err
		}
	}
	slices.Sort(times)
	fmt.Fprintf(out, "failover over %d kills: median %v, max %v, min %v\n", len(times),
		times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), times[0].Round(time.Millisecond))
	return nil
}
