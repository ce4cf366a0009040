package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Numbered records: producing them while faults strike, and checking
// what the cluster kept.

// ackedRecords collects acknowledged numbered records per partition and the
// errors of the failed ones. Safe for concurrent produce callbacks.
type ackedRecords struct {
	mu      sync.Mutex
	acked   map[int32][]int
	count   int
	failed  int
	errs    []error                 // the first maxKeptErrors errors
	waiters map[int][]chan struct{} // closed when count reaches the key
}

// maxKeptErrors bounds the produce errors a test keeps for its report.
const maxKeptErrors = 20

func newAckedRecords() *ackedRecords {
	return &ackedRecords{acked: map[int32][]int{}, waiters: map[int][]chan struct{}{}}
}

// record is a kgo produce promise for the record numbered n.
func (a *ackedRecords) record(n int) func(*kgo.Record, error) {
	return func(r *kgo.Record, err error) { a.add(n, r.Partition, err) }
}

// ackSarama records sarama's outcome for the record numbered n.
func (a *ackedRecords) ackSarama(n int, partition int32, err error) { a.add(n, partition, err) }

func (a *ackedRecords) add(n int, partition int32, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed++
		if len(a.errs) < maxKeptErrors {
			a.errs = append(a.errs, fmt.Errorf("record %d: %w", n, err))
		}
		return
	}
	a.acked[partition] = append(a.acked[partition], n)
	a.count++
	for _, ch := range a.waiters[a.count] {
		close(ch)
	}
	delete(a.waiters, a.count)
}

// failures is how many records failed.
func (a *ackedRecords) failures() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

// ackedAt returns a channel closed once n records are acknowledged.
func (a *ackedRecords) ackedAt(n int) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	if a.count >= n {
		close(ch)
		return ch
	}
	a.waiters[n] = append(a.waiters[n], ch)
	return ch
}

// snapshot returns the acknowledged records per partition, their total and
// the first errors.
func (a *ackedRecords) snapshot() (map[int32][]int, int, []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int32][]int, len(a.acked))
	for p, ns := range a.acked {
		out[p] = slices.Clone(ns)
	}
	return out, a.count, slices.Clone(a.errs)
}

// readNumbered reads a topic from the start up to the end offsets the
// cluster reports now, and returns the numbered values per partition in
// offset order. Call it after producing stopped: the end offset (the high
// watermark) then covers every acknowledged record.
func readNumbered(ctx context.Context, t testing.TB, seeds []string, topic string) map[int32][]int {
	t.Helper()
	adm := observerClient(t, seeds)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	var listErr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			listErr = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			start[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if listErr != nil {
		t.Fatalf("list end offsets of %s: %v", topic, listErr)
	}
	out := map[int32][]int{}
	if len(want) == 0 {
		return out
	}
	consumer := newSeededClient(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	next := map[int32]int64{}
	for !readAllOf(next, want) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: reached %v of end offsets %v: %v", topic, next, want, ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) {
			t.Logf("fetch %s/%d: %v (retrying)", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return // produced after the end offsets were listed
			}
			n, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatalf("%s/%d@%d: value %q is not a record number", topic, r.Partition, r.Offset, r.Value)
			}
			out[r.Partition] = append(out[r.Partition], n)
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}

func readAllOf(next, want map[int32]int64) bool {
	for p, end := range want {
		if next[p] < end {
			return false
		}
	}
	return true
}

// checkExactlyOnceInOrder checks one partition of an idempotent producer's
// numbered records: every acknowledged record was read exactly once, and
// the log holds the numbers in increasing order (so nothing is duplicated
// or reordered, acknowledged or not).
func checkExactlyOnceInOrder(t testing.TB, partition int32, acked, read []int) {
	t.Helper()
	for i := 1; i < len(read); i++ {
		if read[i] <= read[i-1] {
			t.Fatalf("partition %d: record %d at position %d follows %d: duplicated or reordered", partition, read[i], i, read[i-1])
		}
	}
	checkAllPresent(t, partition, acked, read)
}

// checkAllPresent checks that every acknowledged record was read.
func checkAllPresent(t testing.TB, partition int32, acked, read []int) {
	t.Helper()
	if missing := missingFrom(acked, read); len(missing) > 0 {
		t.Fatalf("partition %d: %d acknowledged records lost, first %v", partition, len(missing), missing[:min(len(missing), 10)])
	}
}

// missingFrom returns the acknowledged numbers absent from read.
func missingFrom(acked, read []int) []int {
	seen := make(map[int]bool, len(read))
	for _, n := range read {
		seen[n] = true
	}
	var missing []int
	for _, n := range acked {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return missing
}

// checkAckedRecords reads a topic back and checks every partition of an
// idempotent producer's ackedRecords; it returns how many records were read.
func checkAckedRecords(ctx context.Context, t testing.TB, seeds []string, topic string, log *ackedRecords) int {
	t.Helper()
	acked, _, _ := log.snapshot()
	read := readNumbered(ctx, t, seeds, topic)
	total := 0
	for p, ns := range read {
		checkExactlyOnceInOrder(t, p, acked[p], ns)
		total += len(ns)
	}
	for p, ns := range acked {
		if _, ok := read[p]; !ok && len(ns) > 0 {
			t.Fatalf("partition %d: %d acknowledged records, none read", p, len(ns))
		}
	}
	return total
}

// stream produces numbered records, from a given number up, with at most
// streamWindow of them unacknowledged at a time, so that a fault injected
// while it runs hits records in flight rather than an idle producer.
// Record n goes to partition route(n) (the producer must use
// kgo.ManualPartitioner).
type stream struct {
	producer *kgo.Client
	topic    string
	route    func(n int) int32
	acks     *ackedRecords
	stop     chan struct{} // closed: produce no more records
	done     chan error
	sent     int // records produced; read after done
}

// streamWindow is how many records a stream keeps unacknowledged.
const streamWindow = 100

// openEnded is the end of a stream that runs until stopAndWait: tests
// count progress in acknowledged records, and how many records fit in a
// phase depends on the machine.
const openEnded = 1 << 30

// awaitProgress waits until more more records are acknowledged than now.
func awaitProgress(ctx context.Context, t testing.TB, acks *ackedRecords, more int) {
	t.Helper()
	_, n, _ := acks.snapshot()
	awaitAcked(ctx, t, acks, n+more)
}

// startStream produces records [from, to) on its own goroutine until they
// are all sent or stopStream is called.
func startStream(ctx context.Context, producer *kgo.Client, topic string, route func(int) int32, from, to int, acks *ackedRecords) *stream {
	s := &stream{producer: producer, topic: topic, route: route, acks: acks, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { s.done <- s.run(ctx, from, to) }()
	return s
}

func (s *stream) run(ctx context.Context, from, to int) error {
	slots := make(chan struct{}, streamWindow)
	for n := from; n < to; n++ {
		select {
		case slots <- struct{}{}:
		case <-s.stop:
			to = n
			continue
		case <-ctx.Done():
			return fmt.Errorf("record %d not sent: %w", n, ctx.Err())
		}
		promise := s.acks.record(n)
		r := &kgo.Record{Topic: s.topic, Partition: s.route(n), Value: []byte(strconv.Itoa(n))}
		s.producer.Produce(ctx, r, func(r *kgo.Record, err error) {
			promise(r, err)
			<-slots
		})
		s.sent++
	}
	if err := s.producer.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// wait waits until every record sent is acknowledged or failed, fails the
// test on error, and returns how many records were sent.
func (s *stream) wait(t testing.TB) int {
	t.Helper()
	if err := <-s.done; err != nil {
		t.Fatalf("producing: %v", err)
	}
	return s.sent
}

// stopAndWait stops producing new records, then waits as wait does.
func (s *stream) stopAndWait(t testing.TB) int {
	t.Helper()
	close(s.stop)
	return s.wait(t)
}

// spreadOver routes record n to partition n % partitions.
func spreadOver(partitions int32) func(int) int32 {
	return func(n int) int32 { return int32(n) % partitions }
}

// onlyTo routes every record to one partition.
func onlyTo(partition int32) func(int) int32 {
	return func(int) int32 { return partition }
}

// awaitAcked blocks until n records are acknowledged, or fails the test.
func awaitAcked(ctx context.Context, t testing.TB, acks *ackedRecords, n int) {
	t.Helper()
	select {
	case <-acks.ackedAt(n):
	case <-ctx.Done():
		_, got, errs := acks.snapshot()
		t.Fatalf("only %d of %d records acknowledged: %v (errors %v)", got, n, ctx.Err(), errs)
	}
}

// idempotentProducer is franz-go's default producer (idempotent, acks=all,
// unlimited retries) with records routed by their Partition field. When a
// leader dies without answering, franz-go must refresh metadata to find the
// new one, and it refreshes at most every MetadataMinAge (5 s by default);
// a shorter age keeps the tests quick without changing what they check.
func idempotentProducer(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	return newSeededClient(t, seeds, append([]kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}, opts...)...)
}
