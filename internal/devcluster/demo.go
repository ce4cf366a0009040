package devcluster

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	// demoMetadataMinAge is the demo client's metadata refresh floor.
	demoMetadataMinAge = 250 * time.Millisecond
	// demoTimeout bounds the whole demo.
	demoTimeout = 120 * time.Second
)

// Demo shows replication and failover on the running cluster, writing
// what happens to out: it creates a replicated topic, writes with
// acks=all, kills the partition's leader with kill -9, goes on writing
// through the new leader, reads everything back exactly once, and
// restarts the killed broker until it is back in the ISR. It is bounded by
// demoTimeout and ends early when ctx does (Ctrl-C).
func (c *Cluster) Demo(ctx context.Context, out io.Writer) error {
	const topic = "demo"
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	// franz-go refreshes metadata at most every 5 s by default
	// (MetadataMinAge); a client this fresh would show that floor instead
	// of the cluster's failover. 250 ms is close to the Java client, which
	// retries a refresh after retry.backoff.ms (100 ms).
	cl, err := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(demoMetadataMinAge))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	rf := int16(min(3, c.cfg.Brokers))
	minISR := strconv.Itoa(max(1, int(rf)-1))
	if _, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	var leader, epoch int32
	var isr []int32
	if err := WaitFor(ctx, "a leader", func() bool {
		leader, epoch, isr, err = c.PartitionState(ctx, topic, 0)
		return err == nil && leader > 0 && len(isr) == int(rf)
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "created topic %q: replication factor %d, min.insync.replicas %s; partition 0 leader: broker %d (leader epoch %d), ISR %v\n", topic, rf, minISR, leader, epoch, isr)

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
	fmt.Fprintf(out, "produced %d records with acks=all (idempotent)\n", acked)

	killed := leader
	fmt.Fprintf(out, "killing broker %d (kill -9) ...\n", killed)
	killedAt := time.Now()
	c.Kill(int(killed) - 1)
	acked2, firstAck, err := produce(1000, 2000)
	if err != nil {
		return fmt.Errorf("produce after the kill: %w", err)
	}
	if err := WaitFor(ctx, "a new leader", func() bool {
		leader, epoch, isr, err = c.PartitionState(ctx, topic, 0)
		return err == nil && leader > 0 && leader != killed
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "new leader of partition 0: broker %d (leader epoch %d), ISR %v; first write acknowledged %v after the kill (client metadata refresh floor %v); %d more records acknowledged\n",
		leader, epoch, isr, firstAck.Sub(killedAt).Round(time.Millisecond), demoMetadataMinAge, acked2)

	consumer, err := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
	fmt.Fprintf(out, "read back all %d acknowledged records, each exactly once\n", len(seen))

	fmt.Fprintf(out, "restarting broker %d ...\n", killed)
	if err := c.Start(int(killed) - 1); err != nil {
		return err
	}
	if err := WaitFor(ctx, "the restarted broker to rejoin the ISR", func() bool {
		_, _, isr, err = c.PartitionState(ctx, topic, 0)
		return err == nil && len(isr) == int(rf)
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "broker %d caught up and rejoined the ISR %v\n", killed, isr)
	return nil
}
