package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/verify"
)

// Workload bounds.
const (
	// maxBufferedPerProducer bounds the records a producer has handed to
	// its client and not yet seen answered; beyond it, sending waits.
	maxBufferedPerProducer = 5000
	// pollMaxRecords bounds one consumer poll.
	pollMaxRecords = 1000
)

// verifyProducer sends values "p<id>-<seq>" at a steady rate, spreading
// them over the partitions in turn, and records every send and outcome.
type verifyProducer struct {
	id         int
	cfg        *Config
	rec        *recorder
	cl         *kgo.Client
	seq        int64
	inFlight   sync.WaitGroup // sends whose promise has not run yet
	partitions int32
}

// extra options (a dialer) come after the producer's own.
func newVerifyProducer(id int, cfg *Config, seeds []string, rec *recorder, extra ...kgo.Opt) (*verifyProducer, error) {
	opts := append(cfg.clientOpts(seeds), kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(maxBufferedPerProducer),
		// Tiny batches, sent at once: more requests in flight when a fault
		// strikes is more for the checker to see.
		kgo.ProducerLinger(0))
	switch cfg.Acks {
	case verify.AcksAll:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case verify.AcksLeader:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case verify.AcksNone:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("acks %q: want all, 1 or 0", cfg.Acks)
	}
	if !cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("producer %d: %w", id, err)
	}
	return &verifyProducer{id: id, cfg: cfg, rec: rec, cl: cl, partitions: int32(cfg.Partitions)}, nil
}

// run sends until stop is closed. Records are produced under produceCtx,
// which the caller cancels only to abandon what is still unanswered.
func (p *verifyProducer) run(produceCtx context.Context, stop <-chan struct{}) {
	interval := time.Second / time.Duration(p.cfg.Rate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-produceCtx.Done():
			return
		case <-ticker.C:
		}
		p.send(produceCtx)
	}
}

func (p *verifyProducer) send(ctx context.Context) {
	p.seq++
	seq := p.seq
	partition := int32((seq - 1) % int64(p.partitions))
	value := fmt.Sprintf("p%d-%d", p.id, seq)
	sentAt := time.Now()
	p.rec.addAt(sentAt, verify.Event{Type: verify.EventSend, Producer: p.id, Seq: seq, Partition: partition, Value: value})
	p.inFlight.Add(1)
	p.cl.Produce(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}, func(r *kgo.Record, err error) {
		defer p.inFlight.Done()
		now := time.Now()
		e := verify.Event{Producer: p.id, Seq: seq, Partition: partition, Value: value, Latency: now.Sub(sentAt)}
		if err != nil {
			e.Type, e.Err, e.Definite = verify.EventFail, err.Error(), definitelyNotWritten(err)
		} else {
			e.Type, e.Partition, e.Offset = verify.EventAck, r.Partition, r.Offset
			if p.cfg.Acks == verify.AcksNone {
				e.Offset = -1 // acks=0 answers nothing, so the offset means nothing
			}
		}
		p.rec.addAt(now, e)
	})
}

func (p *verifyProducer) close() { p.cl.Close() }

// finish waits (bounded by flushTimeout) for every record sent to be
// answered; what is still unanswered then fails when the client closes,
// with an unknown outcome.
func (p *verifyProducer) finish(flushTimeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	_ = p.cl.Flush(ctx) // a timeout is fine: Close fails the rest, and each failure is recorded
	p.cl.Close()
	waitGroupFor(&p.inFlight, flushTimeout)
}

// waitGroupFor waits up to d for wg; false when it had not finished by
// then (the goroutine waiting on it stays until it does).
func waitGroupFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// answerGrace bounds the wait for a transaction's record promises once
// its client flushed, or failed to and aborted what it buffered.
const answerGrace = 10 * time.Second

// errUnanswered: a transaction's client holds records it neither sent nor
// failed.
var errUnanswered = errors.New("records never answered: client abandoned")

// definitelyNotWritten tells a failure that proves the record was not
// written from one whose outcome is unknown. Only an error the broker
// answered that the client does not retry counts: a timeout, a closed
// client or a lost connection may each hide a write that happened.
func definitelyNotWritten(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke.Retriable {
		return false
	}
	switch ke {
	case kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return false // written, or perhaps written, on the leader
	}
	return true
}

// progress tracks, per consumer and partition, the offset after the last
// one read, so the drain phase knows when every consumer reached the end.
type progress struct {
	mu   sync.Mutex
	next map[int]map[int32]int64
	// data is, per partition, the offset after the last data record any
	// consumer read (markers left out): where a group that consumed
	// everything commits.
	data    map[int32]int64
	changed chan struct{} // receives (without blocking the sender) after each update
}

func newProgress() *progress {
	return &progress{next: map[int]map[int32]int64{}, data: map[int32]int64{}, changed: make(chan struct{}, 1)}
}

func (p *progress) advanceData(partition int32, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.data[partition] = max(p.data[partition], next)
}

// dataEnds copies data.
func (p *progress) dataEnds() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.data)
}

func (p *progress) advance(consumer int, partition int32, next int64) {
	p.mu.Lock()
	if p.next[consumer] == nil {
		p.next[consumer] = map[int32]int64{}
	}
	if next > p.next[consumer][partition] {
		p.next[consumer][partition] = next
	}
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// behind lists, for the consumers (and the group, when there is one) and
// partitions that have not reached the end offsets, where they are;
// empty when all have.
func (p *progress) behind(consumers int, group bool, ends map[int32]int64) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	first := 1
	if group {
		first = groupProgressID
	}
	for c := first; c <= consumers; c++ {
		who := fmt.Sprintf("consumer %d", c)
		if c == groupProgressID {
			who = "the group"
		}
		for part := int32(0); part < int32(len(ends)); part++ {
			if got := p.next[c][part]; got < ends[part] {
				out = append(out, fmt.Sprintf("%s at offset %d of %d in partition %d", who, got, ends[part], part))
			}
		}
	}
	return out
}

// runConsumer reads every partition from the beginning with an assigned
// (not group) consumer until ctx ends, recording each non-empty poll and
// every record read.
func runConsumer(ctx context.Context, id int, cfg *Config, seeds []string, rec *recorder, prog *progress, extra ...kgo.Opt) error {
	return consumeTopic(ctx, id, cfg, cfg.Topic, verify.EventRead, seeds, rec, prog, extra...)
}

// runOutputConsumer reads the chain's output topic like runConsumer reads
// the input (read_committed: it is the txn workload's), recording reads
// as chain-output events.
func runOutputConsumer(ctx context.Context, id int, cfg *Config, seeds []string, rec *recorder, prog *progress, extra ...kgo.Opt) error {
	return consumeTopic(ctx, id, cfg, cfg.OutputTopic, verify.EventChainOutput, seeds, rec, prog, extra...)
}

// consumeTopic reads every partition of topic from the beginning with an
// assigned consumer until ctx ends, recording each non-empty poll, and
// every record read as an event of type read.
func consumeTopic(ctx context.Context, id int, cfg *Config, topic string, read verify.EventType, seeds []string, rec *recorder, prog *progress, extra ...kgo.Opt) error {
	assign := map[int32]kgo.Offset{}
	for p := range int32(cfg.Partitions) {
		assign[p] = kgo.NewOffset().AtStart()
	}
	opts := append(cfg.clientOpts(seeds), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(500*time.Millisecond))
	txn := cfg.Workload == verify.WorkloadTxn
	if txn {
		// Control records are kept only to see the consumer pass them:
		// a partition ends with a marker, which the drain waits for.
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return fmt.Errorf("consumer %d of %s: %w", id, topic, err)
	}
	defer cl.Close()
	var poll int64
	for ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, pollMaxRecords)
		now := time.Now()
		errs := pollErrors(fetches)
		records := fetches.Records()
		if len(records) == 0 && len(errs) == 0 {
			continue
		}
		poll++
		if read == verify.EventRead {
			// Polls of the chain's output are not recorded: the poll
			// numbers are the input consumer's.
			rec.addAt(now, verify.Event{Type: verify.EventPoll, Consumer: id, Poll: poll, Err: strings.Join(errs, "; ")})
		}
		for _, r := range records {
			if txn && r.Attrs.IsControl() {
				prog.advance(id, r.Partition, r.Offset+1)
				continue
			}
			rec.addAt(now, verify.Event{Type: read, Consumer: id, Poll: poll, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			prog.advance(id, r.Partition, r.Offset+1)
			prog.advanceData(r.Partition, r.Offset+1)
		}
	}
	return nil
}
