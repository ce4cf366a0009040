package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/devcluster"
	"github.com/skein-log/skein/internal/verify"
)

// Bounds of the txn workload's consume-transform-produce chain.
const (
	// Transformers is the default size of the chain (--transformers).
	Transformers = 2
	// chainPollMax bounds the input records one chain transaction
	// transforms.
	chainPollMax = 50
	// chainAbortOneIn: one chain transaction in this many is aborted on
	// purpose (which ones, the seed decides).
	chainAbortOneIn = 6
	// chainZombieOneIn: before ending one chain transaction in this many
	// (of those meant to commit), another client initializes the
	// transformer's transactional id, as a successor would, which fences
	// it; it then tries to commit anyway, as a zombie would: half the
	// time through its session (AddOffsetsToTxn, TxnOffsetCommit, EndTxn),
	// half with a bare EndTxn(commit). Then a new session takes over.
	chainZombieOneIn = 8
	// chainInitTimeout bounds one InitProducerId (through the client's
	// retries); chainRetryWait is the pause before trying again after
	// it failed (the cluster is down for a while under faults).
	chainInitTimeout = 30 * time.Second
	chainRetryWait   = time.Second
	// chainOffsetsTimeout bounds reading the group's committed offsets
	// after the run (stable: pending transactions resolved first, which
	// may take the transaction timeout).
	chainOffsetsTimeout = txnTimeout + 30*time.Second
)

// transformer is one member of the chain: a GroupTransactSession that
// reads the input topic read_committed in the chain's group and, per
// transaction, writes verify.ChainValue of each input record to the same
// partition of the output topic and commits the group's offsets with it.
// It records what it read, wrote, carried and how each end came out.
type transformer struct {
	id   int
	cfg  *Config
	rec  *recorder
	opts []kgo.Opt
	// fencerOpts make a client of the transformer's transactional id
	// outside the group: it fences the transformer without taking its
	// partitions, so the zombie's end is not cut short by a rebalance.
	fencerOpts []kgo.Opt
	sess       *kgo.GroupTransactSession
	rng        *rand.Rand
	txn        int
}

// transformerTxnID is transformer x's transactional id.
func transformerTxnID(topic string, x int) string { return fmt.Sprintf("%s-x%d", topic, x) }

func newTransformer(id int, cfg *Config, seeds []string, rec *recorder, extra ...kgo.Opt) *transformer {
	// One transactional id per transformer (KIP-447: the group's
	// generation fences a member that lost its partitions); its
	// successor takes it over and fences it.
	txnOpts := append(cfg.clientOpts(seeds), kgo.TransactionalID(transformerTxnID(cfg.Topic, id)),
		kgo.TransactionTimeout(txnTimeout), kgo.RecordDeliveryTimeout(txnRecordTimeout))
	opts := append(slices.Clone(txnOpts), kgo.ConsumerGroup(cfg.ChainGroup), kgo.ConsumeTopics(cfg.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.SessionTimeout(groupSessionTimeout), kgo.HeartbeatInterval(groupHeartbeat), kgo.RebalanceTimeout(groupRebalanceTimeout),
		kgo.DefaultProduceTopic(cfg.OutputTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	// Diagnostics only: a log that cannot be opened is noted, not fatal.
	dbg, err := clientDebugLog(cfg, 100+id)
	if err != nil {
		rec.add(verify.Event{Type: verify.EventPhase, Note: fmt.Sprintf("transformer %d: %v", id, err)})
	}
	opts = append(opts, dbg...)
	return &transformer{id: id, cfg: cfg, rec: rec, opts: append(opts, extra...), fencerOpts: append(txnOpts, extra...),
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(1000+id)))}
}

// newSession starts a client for the transformer's transactional id and
// has it initialized at once (InitProducerId, which fences every older
// epoch and aborts what they left open), recording the answer.
func (t *transformer) newSession(ctx context.Context) (*kgo.GroupTransactSession, error) {
	s, err := kgo.NewGroupTransactSession(t.opts...)
	if err != nil {
		return nil, fmt.Errorf("transformer %d: %w", t.id, err)
	}
	ictx, cancel := context.WithTimeout(ctx, chainInitTimeout)
	defer cancel()
	pid, epoch, err := s.Client().ProducerID(ictx)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("transformer %d: init producer id: %w", t.id, err)
	}
	t.rec.add(verify.Event{Type: verify.EventChainInit, Consumer: t.id, Group: t.cfg.ChainGroup, ProducerID: pid, Epoch: epoch})
	return s, nil
}

// fence initializes the transformer's transactional id from another
// client, recording the answer, as a successor starting up would; false
// when it could not.
func (t *transformer) fence(ctx context.Context) bool {
	cl, err := kgo.NewClient(t.fencerOpts...)
	if err != nil {
		return false
	}
	defer cl.Close()
	ictx, cancel := context.WithTimeout(ctx, chainInitTimeout)
	defer cancel()
	pid, epoch, err := cl.ProducerID(ictx)
	if err != nil {
		return false
	}
	t.rec.add(verify.Event{Type: verify.EventChainInit, Consumer: t.id, Group: t.cfg.ChainGroup, ProducerID: pid, Epoch: epoch,
		Note: "a successor fences transformer " + strconv.Itoa(t.id)})
	return true
}

// run transforms until stop is closed, then leaves no transaction open:
// a session whose end failed is replaced by one whose InitProducerId
// aborts what it left. ctx ends only when the run is abandoned (Ctrl-C):
// then every wait of the transformer is cut short.
func (t *transformer) run(ctx context.Context, stop <-chan struct{}) {
	defer func() {
		if t.sess == nil && ctx.Err() == nil {
			t.sess, _ = t.newSession(ctx)
		}
		if t.sess != nil {
			t.sess.Close()
		}
	}()
	for !isClosed(stop) && ctx.Err() == nil {
		if t.sess == nil {
			s, err := t.newSession(ctx)
			if err != nil {
				t.rec.add(verify.Event{Type: verify.EventPhase, Note: err.Error()})
				sleepCtx(ctx, chainRetryWait)
				continue
			}
			t.sess = s
		}
		if err := t.transaction(ctx, stop); err != nil {
			t.sess.Close()
			t.sess = nil
		}
	}
}

// transaction polls a batch of input records and, if there are any,
// transforms them in one transaction and ends it. An error means the
// session must be replaced.
func (t *transformer) transaction(ctx context.Context, stop <-chan struct{}) error {
	pctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
		case <-pctx.Done():
		}
		cancel()
	}()
	fetches := t.sess.PollRecords(pctx, chainPollMax)
	cancel()
	var records []*kgo.Record
	fetches.EachRecord(func(r *kgo.Record) {
		if r.Topic == t.cfg.Topic {
			records = append(records, r)
		}
	})
	if len(records) == 0 {
		if fetches.IsClientClosed() {
			return kgo.ErrClientClosed
		}
		return nil
	}
	t.txn++
	name := fmt.Sprintf("x%d.t%d", t.id, t.txn)
	now := time.Now()
	for _, r := range records {
		t.rec.addAt(now, verify.Event{Type: verify.EventChainRead, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name,
			Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
	}
	if err := t.sess.Begin(); err != nil {
		return fmt.Errorf("begin %s: %w", name, err)
	}
	cl := t.sess.Client()
	var answered sync.WaitGroup
	var failed atomic.Bool
	for _, r := range records {
		out := verify.ChainValue(name, r.Partition, r.Offset, string(r.Value))
		t.rec.add(verify.Event{Type: verify.EventChainWrite, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name, Partition: r.Partition, Value: out})
		answered.Add(1)
		// Failed by its delivery timeout or an abort; by ctx only when the
		// run is abandoned.
		t.sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: []byte(out)}, func(w *kgo.Record, err error) {
			defer answered.Done()
			e := verify.Event{Type: verify.EventChainWritten, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name, Partition: w.Partition, Value: out}
			if err != nil {
				failed.Store(true)
				e.Err = err.Error()
			} else {
				e.Offset = w.Offset
			}
			t.rec.add(e)
		})
	}
	fctx, fcancel := context.WithTimeout(ctx, txnRecordTimeout+5*time.Second)
	flushErr := cl.Flush(fctx)
	fcancel()
	if flushErr != nil {
		actx, acancel := context.WithTimeout(ctx, txnEndTimeout)
		_ = cl.AbortBufferedRecords(actx) // fails what is left; each failure is recorded
		acancel()
	}
	if !waitGroupFor(&answered, answerGrace) {
		dumpUnanswered(t.cfg, name)
		// As txnProducer.transaction: given up on without asking to
		// commit; the next session's InitProducerId aborts it.
		t.rec.add(verify.Event{Type: verify.EventChainEnd, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name, ProducerID: -1,
			Note: "abort", Err: errUnanswered.Error()})
		return fmt.Errorf("%s: %w", name, errUnanswered)
	}
	commit := t.rng.IntN(chainAbortOneIn) != 0 && !failed.Load() && flushErr == nil
	for p, eo := range cl.UncommittedOffsets()[t.cfg.Topic] {
		t.rec.add(verify.Event{Type: verify.EventChainOffset, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name, Partition: p, Offset: eo.Offset})
	}
	zombie := commit && t.rng.IntN(chainZombieOneIn) == 0 && t.fence(ctx) // recorded; on failure an ordinary end
	bare := zombie && t.rng.IntN(2) == 0
	pid, epoch := int64(-1), int16(0)
	ictx, icancel := context.WithTimeout(ctx, 5*time.Second)
	if id, e, err := cl.ProducerID(ictx); err == nil {
		pid, epoch = id, e
	}
	icancel()
	ectx, ecancel := context.WithTimeout(ctx, txnEndTimeout)
	defer ecancel()
	sentAt := time.Now()
	var committed bool
	var err error
	if bare {
		// The session is past saving: its client ends the transaction
		// with a commit itself, without the group's offsets.
		err = cl.EndTransaction(ectx, kgo.TryCommit)
		committed = err == nil
	} else {
		committed, err = t.sess.End(ectx, kgo.TransactionEndTry(commit))
	}
	done := time.Now()
	e := verify.Event{Type: verify.EventChainEnd, Consumer: t.id, Group: t.cfg.ChainGroup, Txn: name, Latency: done.Sub(sentAt),
		ProducerID: pid, Epoch: epoch, Note: "abort"}
	switch {
	case err != nil:
		e.Err = err.Error()
		if commit {
			e.Note = "unknown"
		}
	case committed:
		e.Note = "commit"
	}
	t.rec.addAt(done, e)
	if zombie {
		// The fenced session is done with; a new one carries on.
		t.sess.Close()
		t.sess = nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("end %s: %w", name, err)
	}
	return nil
}

// chainStage runs the transformers and the output consumers.
type chainStage struct {
	cfg        *Config
	seeds      []string
	rec        *recorder
	outProg    *progress
	stop       chan struct{}
	running    sync.WaitGroup
	consumers  sync.WaitGroup
	consumerCx context.CancelFunc
	errs       chan error
}

// startChain starts cfg.Transformers transformers and cfg.Consumers
// read_committed consumers of the output topic (numbered like the input
// consumers, each assigned every output partition from the start).
// dial gives a client its dialer through the fault proxies: from the
// address of host id of network net.
func startChain(ctx context.Context, cfg *Config, seeds []string, rec *recorder, dial func(net string, id int) []kgo.Opt) *chainStage {
	cs := &chainStage{cfg: cfg, seeds: seeds, rec: rec, outProg: newProgress(), stop: make(chan struct{}), errs: make(chan error, cfg.Consumers)}
	cctx, cancel := context.WithCancel(ctx)
	cs.consumerCx = cancel
	for id := 1; id <= cfg.Consumers; id++ {
		cs.consumers.Go(func() {
			if err := runOutputConsumer(cctx, id, cfg, seeds, rec, cs.outProg, dial(consumerNet, id)...); err != nil {
				cs.errs <- err
			}
		})
	}
	for id := 1; id <= cfg.Transformers; id++ {
		t := newTransformer(id, cfg, seeds, rec, dial(transformerNet, id)...)
		cs.running.Go(func() { t.run(ctx, cs.stop) })
	}
	return cs
}

// finish waits, bounded by --drain-timeout, for the chain to commit
// every input record the consumers read (inputEnds: per partition, the
// offset after the last one), stops the transformers, records the
// group's committed offsets, and drains the output consumers. It fills
// the chain's fields of meta.
func (cs *chainStage) finish(ctx context.Context, inputEnds map[int32]int64, meta *verify.Meta, log io.Writer) {
	cfg := cs.cfg
	cl, err := kgo.NewClient(cfg.clientOpts(cs.seeds)...)
	if err != nil {
		fmt.Fprintf(log, "verify: chain: admin client: %v\n", err)
	} else {
		defer cl.Close()
	}
	adm := kadm.NewClient(cl)
	if cl != nil {
		fmt.Fprintf(log, "verify: waiting for the chain to commit input up to %v\n", inputEnds)
		wctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
		meta.ChainCaughtUp = devcluster.WaitFor(wctx, "the chain to commit every input", func() bool {
			offs, err := chainOffsets(wctx, adm, cfg, false)
			if err != nil {
				return false
			}
			for p, end := range inputEnds {
				if offs[p] < end {
					return false
				}
			}
			return true
		}) == nil
		cancel()
	}
	close(cs.stop)
	cs.running.Wait()
	cs.rec.add(verify.Event{Type: verify.EventPhase, Note: "chain stopped"})
	if cl != nil {
		octx, cancel := context.WithTimeout(ctx, chainOffsetsTimeout)
		var final map[int32]int64
		var last error
		err := devcluster.WaitFor(octx, "the chain group's stable committed offsets", func() bool {
			final, last = chainOffsets(octx, adm, cfg, true)
			return last == nil
		})
		cancel()
		if err != nil {
			fmt.Fprintf(log, "verify: chain: %v (%v)\n", err, last)
		} else {
			for p := range int32(cfg.Partitions) {
				off, ok := final[p]
				if !ok {
					off = -1
				}
				cs.rec.add(verify.Event{Type: verify.EventChainCommitted, Group: cfg.ChainGroup, Partition: p, Offset: off})
			}
		}
	}
	meta.ChainDrainComplete, meta.ChainDrainNote = drainTopic(ctx, cfg, cs.seeds, cfg.OutputTopic, cs.outProg, cfg.Consumers, false, log)
	cs.consumerCx()
	cs.consumers.Wait()
}

// err is the first output consumer's error, once they stopped.
func (cs *chainStage) err() error {
	close(cs.errs)
	return <-cs.errs
}

// abandon stops everything without waiting for the chain to catch up.
func (cs *chainStage) abandon() {
	close(cs.stop)
	cs.consumerCx()
	cs.running.Wait()
	cs.consumers.Wait()
}

// chainOffsets reads the chain group's committed offsets of the input
// topic; stable waits out pending transactional commits (KIP-447
// require_stable).
func chainOffsets(ctx context.Context, adm *kadm.Client, cfg *Config, stable bool) (map[int32]int64, error) {
	if stable {
		ctx = kadm.RequireStable(ctx)
	}
	attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(attempt, cfg.ChainGroup)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch the chain group's offsets: %w", err)
	}
	out := map[int32]int64{}
	for p, o := range resp[cfg.Topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, o.Err)
		}
		out[p] = o.At
	}
	return out, nil
}
