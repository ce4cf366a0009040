package node

import (
	"sync"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// txnCoordinator wraps the txnhost.Host of one __transaction_state
// partition led here, in one leader epoch, with a mutex, timers and
// goroutines: it loads the partition on a goroutine, carries out each
// Ready (appends through the partition's produce, waits on its high
// watermark, delivers markers) and reloads after a failed write.
//
// Locking: mu serialises every call into the host and the appends of its
// records, so records reach the log in the order the host handed them
// out. Answers are sent after mu is released; write outcomes and marker
// deliveries run on their own goroutines.
type txnCoordinator struct {
	rt    *txnRuntime
	part  *partition
	epoch int32

	mu   sync.Mutex
	host *txnhost.Host
	// abort fires every
	// transaction.abort.timed.out.transaction.cleanup.interval.ms, expire
	// every transaction.remove.expired.transaction.cleanup.interval.ms.
	// Nil until loaded.
	abort, expire *time.Timer
	// retry fires at retryAt (ms; 0: not armed), the earliest RetryAt a
	// Ready asked for: refused completions are written again then.
	retry   *time.Timer
	retryAt int64
}

var _ txnhost.Handle = (*txnCoordinator)(nil)

func newTxnCoordinator(rt *txnRuntime, p *partition, epoch int32) *txnCoordinator {
	return &txnCoordinator{rt: rt, part: p, epoch: epoch, host: txnhost.New(p.name(), epoch)}
}

func (tc *txnCoordinator) partitionOf() *partition { return tc.part }
func (tc *txnCoordinator) leaderEpoch() int32      { return tc.epoch }

func (tc *txnCoordinator) isStopped() bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.host.Stopped()
}

// load rebuilds the coordinator from the partition's log (outside mu:
// requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS) and activates it.
func (tc *txnCoordinator) load() {
	start := time.Now()
	l, err := txnhost.Replay(tc.rt.cfg, tc.part.log, tc.part.name())
	if err != nil {
		tc.rt.b.log.Error("loading transaction state failed", "partition", tc.part.name(), "err", err)
		tc.stop("load failed")
		// A transient read error may pass; no tight loop.
		tc.rt.replaceFailed(tc, loadRetryPeriod)
		return
	}
	ids := l.Coordinator.Len()
	activated := false
	_ = tc.Do(func(h *txnhost.Host, _ int64) (txnhost.Ready, error) {
		if h.Stopped() {
			return txnhost.Ready{}, nil
		}
		activated = true
		cfg := tc.rt.b.cfg
		tc.abort = time.AfterFunc(cfg.TransactionAbortCheckInterval, tc.onAbortTimer)
		tc.expire = time.AfterFunc(cfg.TransactionExpireCheckInterval, tc.onExpireTimer)
		return h.Activate(l), nil
	})
	if activated {
		tc.rt.b.log.Info("coordinating transactions", "partition", tc.part.name(), "epoch", tc.epoch,
			"transactional_ids", ids, "load_time", time.Since(start).Round(time.Millisecond))
	}
}

// Writable is txnhost.Handle's.
func (tc *txnCoordinator) Writable() error { return tc.part.acksAllWritable() }

// Do is txnhost.Handle's: op runs under mu, the Ready's writes start
// under it too (log order), its answers go out after.
func (tc *txnCoordinator) Do(op func(h *txnhost.Host, now int64) (txnhost.Ready, error)) error {
	tc.mu.Lock()
	now := nowMs()
	rd, err := op(tc.host, now)
	if err != nil {
		tc.mu.Unlock()
		return err
	}
	tc.armRetryLocked(now, rd.RetryAt)
	for _, w := range rd.Writes {
		done := func(err error) { go tc.written(w.ID, err) }
		if w.Records == nil {
			tc.part.awaitCommitted(w.AwaitCommitted, txnWriteTimeout, done)
			continue
		}
		tc.appendLocked(w.Records, done)
	}
	tc.mu.Unlock()
	for _, w := range rd.Warnings {
		tc.rt.b.log.Warn(w, "partition", tc.part.name())
	}
	for _, m := range rd.Markers {
		go tc.rt.deliverMarkers(tc, m)
	}
	for _, send := range rd.Send {
		send()
	}
	if rd.Reload != nil {
		tc.rt.b.log.Warn("transaction state write failed; reloading", "partition", tc.part.name(), "err", rd.Reload)
		go tc.fail()
	}
	return nil
}

func (tc *txnCoordinator) written(id uint64, err error) {
	_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.Written(now, id, err), nil })
}

// appendLocked appends records as one batch with acks=all.
func (tc *txnCoordinator) appendLocked(recs []txn.Record, done func(error)) {
	kvs := make([]batch.KeyValue, len(recs))
	for i, r := range recs {
		kvs[i] = batch.KeyValue{Key: r.Key, Value: r.Value}
	}
	req := api.ProduceParams{
		Topic: tc.part.id, Partition: tc.part.index,
		Batches: [][]byte{batch.BuildKeyed(kvs, nowMs())},
		Acks:    -1, Timeout: txnWriteTimeout,
	}
	tc.part.produce(req, func(res api.ProduceResult) { done(res.Err) })
}

// The timers run from the load on; a round while the loaded log is not
// yet committed does nothing (COORDINATOR_LOAD_IN_PROGRESS) and the next
// one is armed all the same.
func (tc *txnCoordinator) onAbortTimer() {
	_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.AbortTimedOut(now) })
	tc.rearm(tc.abort, tc.rt.b.cfg.TransactionAbortCheckInterval)
}

func (tc *txnCoordinator) onExpireTimer() {
	_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.ExpireTransactionalIDs(now) })
	tc.rearm(tc.expire, tc.rt.b.cfg.TransactionExpireCheckInterval)
}

// armRetryLocked sets the retry timer to fire at at (ms) unless it fires
// earlier already.
func (tc *txnCoordinator) armRetryLocked(now, at int64) {
	if at == 0 || tc.host.Stopped() || (tc.retryAt != 0 && tc.retryAt <= at) {
		return
	}
	tc.retryAt = at
	d := time.Duration(max(at-now, 0)) * time.Millisecond
	if tc.retry == nil {
		tc.retry = time.AfterFunc(d, tc.onRetryTimer)
		return
	}
	tc.retry.Reset(d)
}

func (tc *txnCoordinator) onRetryTimer() {
	_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) {
		tc.retryAt = 0
		return h.RetryCompletions(now)
	})
}

func (tc *txnCoordinator) rearm(t *time.Timer, d time.Duration) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if !tc.host.Stopped() {
		t.Reset(d)
	}
}

// stop unloads the coordinator for good.
func (tc *txnCoordinator) stop(why string) {
	tc.mu.Lock()
	if tc.host.Stopped() {
		tc.mu.Unlock()
		return
	}
	wasActive := tc.host.Active()
	rd := tc.host.Stop()
	if tc.abort != nil {
		tc.abort.Stop()
		tc.expire.Stop()
	}
	if tc.retry != nil {
		tc.retry.Stop()
	}
	tc.mu.Unlock()
	for _, send := range rd.Send {
		send()
	}
	if wasActive {
		tc.rt.b.log.Info("stopped coordinating transactions", "partition", tc.part.name(), "epoch", tc.epoch, "why", why)
	}
}

// fail handles a failed write: the coordinator is unloaded and the
// partition loaded again from the log.
func (tc *txnCoordinator) fail() {
	if tc.isStopped() {
		return
	}
	tc.stop("write failed")
	tc.rt.replaceFailed(tc, txnhost.ReloadBackoff)
}
