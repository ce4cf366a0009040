package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// numberedPartitions is the partition count of the durability topics;
// record n goes to partition n % numberedPartitions.
const numberedPartitions = 3

// ackLog records which numbered records were acknowledged, and where.
type ackLog struct {
	mu    sync.Mutex
	at    map[int32]map[int64]uint64 // partition -> offset -> record number
	count int
	// wantCount and reached signal the moment count reaches wantCount.
	wantCount int
	reached   chan struct{}
}

func newAckLog() *ackLog {
	l := &ackLog{at: map[int32]map[int64]uint64{}}
	for p := range int32(numberedPartitions) {
		l.at[p] = map[int64]uint64{}
	}
	return l
}

// notifyAt returns a channel closed once count acknowledgements in total
// have been recorded.
func (l *ackLog) notifyAt(count int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wantCount = count
	l.reached = make(chan struct{})
	if l.count >= count {
		close(l.reached)
	}
	return l.reached
}

// total is the number of acknowledgements so far.
func (l *ackLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func (l *ackLog) ack(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at[r.Partition][r.Offset] = binary.BigEndian.Uint64(r.Value)
	l.count++
	if l.reached != nil && l.count == l.wantCount {
		close(l.reached)
	}
}

// numberedProducer sends records 0, 1, 2, ... (value: the number, 8 bytes)
// with franz-go's defaults (idempotent, acks=all) until its context ends,
// logging every acknowledgement.
type numberedProducer struct {
	cl   *kgo.Client
	acks *ackLog
	done chan struct{}
	next uint64 // first number not handed to the client yet, once done
}

func startNumberedProducer(ctx context.Context, t *testing.T, addr, topic string, first uint64, acks *ackLog) *numberedProducer {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// A little linger batches records as real producers do, so a
		// kill lands between and inside multi-record batches.
		kgo.ProducerLinger(2*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	np := &numberedProducer{cl: cl, acks: acks, done: make(chan struct{})}
	go func() {
		defer close(np.done)
		n := first
		for ctx.Err() == nil {
			r := &kgo.Record{Partition: int32(n % numberedPartitions), Value: binary.BigEndian.AppendUint64(nil, n)}
			// Produce blocks while the client's buffer is full and
			// returns at once (with the promise failed) after ctx ends.
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err == nil {
					acks.ack(r)
				}
			})
			n++
		}
		np.next = n
	}()
	return np
}

// stop ends production and closes the client; records not acknowledged by
// now are failed and stay out of the ack log.
func (np *numberedProducer) stop(cancel context.CancelFunc) uint64 {
	cancel()
	<-np.done
	np.cl.Close()
	return np.next
}

// TestKillNineDuringProduce kills a real skein process with SIGKILL while a
// producer writes with acks=all, three times at different points, restarting
// it on the same data each time. acks=all completes only after fsync, so
// every acknowledged record must be there afterwards, at the offset it was
// acknowledged with, and every partition's offsets must run without gaps.
func TestKillNineDuringProduce(t *testing.T) {
	proc := startSkeinProcess(t)
	const topic = "kill9"
	createTopicAt(t, proc.addr(), topic, numberedPartitions)

	acks := newAckLog()
	next := uint64(0)
	// Each round kills after this many more acknowledgements. A produce
	// answer acknowledges a whole batch at once, so the kill lands at the
	// first answer past the mark, while later batches are in flight.
	for round, killAfter := range []int{1, 3000, 10000} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		reached := acks.notifyAt(acks.total() + killAfter)
		np := startNumberedProducer(ctx, t, proc.addr(), topic, next, acks)
		select {
		case <-reached:
		case <-ctx.Done():
			np.stop(cancel)
			t.Fatalf("round %d: %d more acknowledgements not reached: %v\n%s", round, killAfter, ctx.Err(), proc.watcher.tail())
		}
		proc.kill()
		killed := time.Since(start)
		next = np.stop(cancel)
		stopped := time.Since(start)
		proc.start()
		t.Logf("round %d: killed after %d acknowledgements in total (%v), %d records handed to producers, producer closed at %v, restarted at %v",
			round, acks.total(), killed, next, stopped, time.Since(start))
	}
	verifyAcknowledged(t, proc.addr(), topic, acks)
}

// verifyAcknowledged reads every partition from offset 0 to its high
// watermark and checks that offsets are contiguous, that no record number
// is stored twice, and that every acknowledged record sits at its offset.
// It returns the record numbers stored in each partition, in offset order.
func verifyAcknowledged(t *testing.T, addr, topic string, acks *ackLog) map[int32][]uint64 {
	t.Helper()
	ctx := testContext(t, 45*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets: %v", err)
	}
	stored := map[int32][]uint64{}
	offsets := map[int32]kgo.Offset{}
	remaining := int64(0)
	for p := range int32(numberedPartitions) {
		o, ok := ends.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("end offset of partition %d: found=%v err=%v", p, ok, o.Err)
		}
		remaining += o.Offset
		offsets[p] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	for remaining > 0 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back: %d records missing below the high watermarks: %v", remaining, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := int64(len(stored[r.Partition])); r.Offset != want {
				t.Fatalf("partition %d: record at offset %d, want %d (gap)", r.Partition, r.Offset, want)
			}
			stored[r.Partition] = append(stored[r.Partition], binary.BigEndian.Uint64(r.Value))
			remaining--
		})
	}

	seen := map[uint64]string{}
	total := 0
	for p, values := range stored {
		total += len(values)
		for off, n := range values {
			where := fmt.Sprintf("%d/%d", p, off)
			if prev, dup := seen[n]; dup {
				t.Errorf("record %d stored twice: at %s and %s", n, prev, where)
			}
			seen[n] = where
			if int32(n%numberedPartitions) != p {
				t.Errorf("record %d stored in partition %d", n, p)
			}
		}
	}
	acks.mu.Lock()
	defer acks.mu.Unlock()
	lost := 0
	for p, byOffset := range acks.at {
		for off, n := range byOffset {
			if off >= int64(len(stored[p])) || stored[p][off] != n {
				lost++
				if lost <= 10 {
					t.Errorf("acknowledged record %d at %d/%d is lost", n, p, off)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost", lost, acks.count)
	}
	t.Logf("%d acknowledged records all present; %d stored in total", acks.count, total)
	return stored
}

// createTopicAt creates a topic with a throwaway admin client.
func createTopicAt(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}
