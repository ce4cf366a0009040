package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/verify"
)

// Bounds of the txn workload.
const (
	// txnRecords is how many records one transaction writes, spread
	// over the partitions in turn.
	txnRecords = 6
	// txnAbortOneIn: one transaction in this many is aborted on purpose
	// (which ones, the seed decides).
	txnAbortOneIn = 4
	// txnTimeout is the producers' transaction.timeout.ms: past it the
	// coordinator aborts a transaction its producer lost track of.
	txnTimeout = 20 * time.Second
	// txnRecordTimeout bounds one record's delivery, and txnEndTimeout
	// one EndTxn, so a transaction stuck behind a fault is given up on
	// (aborted) rather than waited for.
	txnRecordTimeout = 15 * time.Second
	txnEndTimeout    = 30 * time.Second
)

// txnProducer writes transactions of txnRecords values "p<id>-<seq>" at
// the workload's rate, commits most and aborts some on purpose, and
// records every send, answer and end of transaction (with Txn set).
type txnProducer struct {
	id         int
	cfg        *Config
	rec        *recorder
	opts       []kgo.Opt
	cl         *kgo.Client
	rng        *rand.Rand
	seq        int64
	txn        int
	partitions int32
}

func newTxnProducer(id int, cfg *Config, seeds []string, rec *recorder, extra ...kgo.Opt) (*txnProducer, error) {
	opts := append(cfg.clientOpts(seeds), kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(maxBufferedPerProducer),
		kgo.ProducerLinger(0),
		// One transactional id per producer and run: a replacement client
		// (after an unconfirmed end) fences the old one and finishes what
		// it left.
		kgo.TransactionalID(fmt.Sprintf("%s-p%d", cfg.Topic, id)),
		kgo.TransactionTimeout(txnTimeout), kgo.RecordDeliveryTimeout(txnRecordTimeout))
	opts = append(opts, extra...)
	dbg, err := clientDebugLog(cfg, id)
	if err != nil {
		return nil, err
	}
	opts = append(opts, dbg...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("transactional producer %d: %w", id, err)
	}
	return &txnProducer{id: id, cfg: cfg, rec: rec, opts: opts, cl: cl, partitions: int32(cfg.Partitions),
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id)))}, nil
}

// run writes transactions until stop is closed; the one under way then
// is aborted.
func (p *txnProducer) run(produceCtx context.Context, stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second / time.Duration(p.cfg.Rate))
	defer ticker.Stop()
	for !isClosed(stop) && produceCtx.Err() == nil {
		if err := p.transaction(produceCtx, ticker.C, stop); err != nil {
			// The client may be wedged: a new one with the same id fences
			// it and resolves its last transaction.
			p.cl.Close()
			cl, err := kgo.NewClient(p.opts...)
			if err != nil {
				p.rec.add(verify.Event{Type: verify.EventPhase, Note: fmt.Sprintf("producer %d stopped: %v", p.id, err)})
				return
			}
			p.cl = cl
		}
	}
}

// transaction writes one transaction and ends it; an error means the
// client should be replaced.
func (p *txnProducer) transaction(ctx context.Context, tick <-chan time.Time, stop <-chan struct{}) error {
	p.txn++
	name := fmt.Sprintf("p%d.t%d", p.id, p.txn)
	commit := p.rng.IntN(txnAbortOneIn) != 0
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin %s: %w", name, err)
	}
	var answered sync.WaitGroup
	var mu sync.Mutex
	failed := false
	for range txnRecords {
		select {
		case <-tick:
		case <-stop:
			commit = false // the run is over: nothing half-written stays open
		case <-ctx.Done():
			commit = false
		}
		if !commit && (ctx.Err() != nil || isClosed(stop)) {
			break
		}
		p.seq++
		seq := p.seq
		partition := int32((seq - 1) % int64(p.partitions))
		value := fmt.Sprintf("p%d-%d", p.id, seq)
		sentAt := time.Now()
		p.rec.addAt(sentAt, verify.Event{Type: verify.EventSend, Producer: p.id, Seq: seq, Partition: partition, Value: value, Txn: name})
		answered.Add(1)
		p.cl.Produce(ctx, &kgo.Record{Partition: partition, Value: []byte(value)}, func(r *kgo.Record, err error) {
			defer answered.Done()
			now := time.Now()
			e := verify.Event{Producer: p.id, Seq: seq, Partition: partition, Value: value, Latency: now.Sub(sentAt), Txn: name}
			if err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
				e.Type, e.Err, e.Definite = verify.EventFail, err.Error(), definitelyNotWritten(err)
			} else {
				e.Type, e.Offset = verify.EventAck, r.Offset
			}
			p.rec.addAt(now, e)
		})
	}
	fctx, cancel := context.WithTimeout(ctx, txnRecordTimeout+5*time.Second)
	flushErr := p.cl.Flush(fctx)
	cancel()
	if flushErr != nil {
		actx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
		_ = p.cl.AbortBufferedRecords(actx) // fails what is left; each failure is recorded
		cancel()
	}
	if !waitGroupFor(&answered, answerGrace) {
		// The client holds records it neither sends nor fails (seen
		// under faults: Flush and AbortBufferedRecords time out and the
		// promises never run). It is given up on without asking to
		// commit, so the transaction cannot have committed; the
		// replacement's InitProducerId aborts it. Closing the client
		// fails the records, and those failures are recorded.
		dumpUnanswered(p.cfg, name)
		p.rec.add(verify.Event{Type: verify.EventTxnEnd, Producer: p.id, Txn: name, Note: "abort", Err: errUnanswered.Error()})
		return fmt.Errorf("%s: %w", name, errUnanswered)
	}
	mu.Lock()
	if failed || flushErr != nil {
		commit = false // a record not written: the transaction cannot be whole
	}
	mu.Unlock()
	note := "abort"
	if commit {
		note = "commit"
	}
	ectx, cancel := context.WithTimeout(context.Background(), txnEndTimeout)
	defer cancel()
	err := p.cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
	e := verify.Event{Type: verify.EventTxnEnd, Producer: p.id, Txn: name, Note: note}
	if err != nil {
		e.Err = err.Error()
	}
	p.rec.add(e)
	if err == nil {
		return nil
	}
	// franz-go's advice after a failed end: abort, which bumps the epoch
	// and fences whatever is still open.
	if err := p.cl.EndTransaction(ectx, kgo.TryAbort); err != nil {
		return fmt.Errorf("end %s: %w", name, err)
	}
	return nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finish closes the client: run already ended the last transaction.
func (p *txnProducer) finish(time.Duration) { p.cl.Close() }

func (p *txnProducer) close() { p.cl.Close() }
