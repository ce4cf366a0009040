package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/txn"
	"github.com/skein-log/skein/internal/txnhost"
)

// The transaction coordinator's runtime: the txnhost.Host internal/node
// runs (node/txn_coordinator.go, node/txn_markers.go), on the event
// queue. Each __transaction_state partition this node leads has a
// coordinator for that leader epoch, loaded by replay when leadership
// arrives; its writes go through the replica's produce (acks=all) and
// awaitCommitted, outcomes come back as events, a Ready asking for a
// reload stops the Host and loads the partition again. Markers go to the
// partition leaders over the simulated network and are retried as node
// retries them. The harness creates __transaction_state with the data
// topic when the run has transactional clients.

const (
	txnStateTopic = api.TransactionStateTopic
	// Production's timings, scaled down with the rest of the simulated
	// runtime: the write wait, the abort and expiry rounds, the marker
	// backoff.
	txnWriteTimeout     = 2 * time.Second
	txnAbortInterval    = 500 * time.Millisecond
	txnExpireInterval   = 5 * time.Second
	txnExpirationMs     = 20_000
	txnMaxTimeoutMs     = 10_000
	txnLoadRetryPeriod  = time.Second
	txnMarkerBackoffMin = 25 * time.Millisecond
	txnMarkerBackoffMax = 500 * time.Millisecond
)

func simTxnConfig() txn.Config {
	cfg := txn.DefaultConfig()
	cfg.MaxTimeoutMs, cfg.ExpirationMs = txnMaxTimeoutMs, txnExpirationMs
	cfg.RetryBackoffMs, cfg.RetryBackoffMaxMs = txnMarkerBackoffMin.Milliseconds(), txnMarkerBackoffMax.Milliseconds()
	return cfg
}

// txnCoordinator wraps the Host of one __transaction_state partition in
// one leader epoch (internal/node's txnCoordinator).
type txnCoordinator struct {
	r     *replica
	epoch int32
	host  *txnhost.Host
	// retryAt is when the retry of refused completions is scheduled
	// (ms; 0: none), the earliest RetryAt a Ready asked for.
	retryAt int64
}

var _ txnhost.Handle = (*txnCoordinator)(nil)

// startTxnCoordinator replaces the replica's transaction coordinator with
// one for its current leader epoch, loaded from the log.
func (r *replica) startTxnCoordinator() {
	r.stopTxnCoordinator("new leader epoch")
	l, err := txnhost.Replay(simTxnConfig(), r.log, r.name())
	if err != nil {
		r.p.n.tracef("%s: loading transaction state failed: %v; retrying", r.name(), err)
		epoch := r.core.LeaderEpoch()
		r.p.n.after(txnLoadRetryPeriod, func() {
			if r.txnCoord == nil && r.core.IsLeader() && r.core.LeaderEpoch() == epoch && r.p.parts[partKey{r.id, r.index}] == r {
				r.startTxnCoordinator()
			}
		})
		return
	}
	tc := &txnCoordinator{r: r, epoch: r.core.LeaderEpoch(), host: txnhost.New(r.name(), r.core.LeaderEpoch())}
	r.txnCoord = tc
	r.p.n.tracef("%s: coordinating %d transactional ids in epoch %d", r.name(), l.Coordinator.Len(), tc.epoch)
	_ = tc.Do(func(h *txnhost.Host, _ int64) (txnhost.Ready, error) { return h.Activate(l), nil })
	tc.every(txnAbortInterval, func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.AbortTimedOut(now) })
	tc.every(txnExpireInterval, func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.ExpireTransactionalIDs(now) })
}

// stopTxnCoordinator unloads the replica's transaction coordinator.
func (r *replica) stopTxnCoordinator(why string) {
	tc := r.txnCoord
	if tc == nil {
		return
	}
	r.txnCoord = nil
	tc.carryOut(tc.host.Stop())
	r.p.n.tracef("%s: stopped coordinating transactions of epoch %d (%s)", r.name(), tc.epoch, why)
}

// every runs op on the host every period until the host stops.
func (tc *txnCoordinator) every(period time.Duration, op func(h *txnhost.Host, now int64) (txnhost.Ready, error)) {
	tc.r.p.n.after(period, func() {
		if tc.host.Stopped() {
			return
		}
		_ = tc.Do(op)
		tc.every(period, op)
	})
}

// Do is txnhost.Handle's.
func (tc *txnCoordinator) Do(op func(h *txnhost.Host, now int64) (txnhost.Ready, error)) error {
	rd, err := op(tc.host, tc.r.nowMs())
	if err != nil {
		return err
	}
	st := &tc.r.p.n.c.check.stats
	st.TxnHeldMax = max(st.TxnHeldMax, tc.host.Held())
	tc.carryOut(rd)
	return nil
}

// Writable is txnhost.Handle's.
func (tc *txnCoordinator) Writable() error {
	if !tc.r.core.IsLeader() {
		return kerr.NotLeaderForPartition
	}
	return tc.r.core.AcksAllWritable()
}

func (tc *txnCoordinator) carryOut(rd txnhost.Ready) {
	r := tc.r
	if at := rd.RetryAt; at != 0 && (tc.retryAt == 0 || at < tc.retryAt) {
		tc.retryAt = at
		r.p.n.after(time.Duration(max(at-r.nowMs(), 0))*time.Millisecond, func() {
			if tc.host.Stopped() || tc.retryAt != at {
				return // stopped, or an earlier retry replaced this one
			}
			tc.retryAt = 0
			_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.RetryCompletions(now) })
		})
	}
	for _, w := range rd.Writes {
		done := func(err error) {
			r.p.n.after(0, func() {
				_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.Written(now, w.ID, err), nil })
			})
		}
		if w.Records == nil {
			r.awaitCommitted(w.AwaitCommitted, txnWriteTimeout, done)
			continue
		}
		kvs := make([]batch.KeyValue, len(w.Records))
		for i, rec := range w.Records {
			kvs[i] = batch.KeyValue{Key: rec.Key, Value: rec.Value}
		}
		r.produce(api.ProduceParams{Topic: r.id, Partition: r.index, Batches: [][]byte{batch.BuildKeyed(kvs, r.nowMs())},
			Acks: -1, Timeout: txnWriteTimeout}, func(res api.ProduceResult) { done(res.Err) })
	}
	for _, w := range rd.Warnings {
		r.p.n.tracef("%s: %s", r.name(), w)
	}
	for _, m := range rd.Markers {
		tc.deliver(m, m.Partitions, txnMarkerBackoffMin)
	}
	for _, send := range rd.Send {
		send()
	}
	if rd.Reload != nil {
		r.p.n.after(0, tc.fail)
	}
}

// fail stops the coordinator after a Ready asked for a reload and loads
// the partition again txnhost.ReloadBackoff later, if the replica still
// leads it in the same epoch and no other start came first (as node's
// coordinatorSet.replaceFailed).
func (tc *txnCoordinator) fail() {
	r := tc.r
	if tc.host.Stopped() || r.txnCoord != tc {
		return
	}
	r.stopTxnCoordinator("write failed")
	r.p.n.after(txnhost.ReloadBackoff, func() {
		if r.txnCoord == nil && r.core.IsLeader() && r.core.LeaderEpoch() == tc.epoch && r.p.parts[partKey{r.id, r.index}] == r {
			r.startTxnCoordinator()
		}
	})
}

// servesMarkers: the partition side's WriteTxnMarkers handler. Without it
// a leader's connection layer would close the connection on the unknown
// key (internal/node), so a delivery fails as a lost request and is
// retried; the simulated Serve must not be handed a key it has no handler
// for.
var servesMarkers = slices.ContainsFunc(api.Specs(), func(s api.Spec) bool { return s.Key == 27 })

// deliver sends the markers still missing (left) to their leaders as
// this node's image names them, one round at a time with backoff, and
// reports completion to the host (node/txn_markers.go's loop).
func (tc *txnCoordinator) deliver(m txnhost.Markers, left []txn.TopicPartition, backoff time.Duration) {
	r := tc.r
	n := r.p.n
	if tc.host.Stopped() {
		return
	}
	byLeader := map[int32][]txn.TopicPartition{}
	var next []txn.TopicPartition
	for _, tp := range left {
		t, ok := r.p.image.Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue // deleted: nothing to mark
		}
		l := t.Partitions[tp.Partition].Leader
		if l < 0 || !servesMarkers {
			next = append(next, tp)
			continue
		}
		byLeader[l] = append(byLeader[l], tp)
	}
	leaders := make([]int32, 0, len(byLeader))
	for l := range byLeader {
		leaders = append(leaders, l)
	}
	slices.Sort(leaders) // deterministic order of sends
	outstanding := len(leaders)
	fenced := false
	round := func() {
		if fenced || tc.host.Stopped() {
			return
		}
		if len(next) == 0 {
			_ = tc.Do(func(h *txnhost.Host, now int64) (txnhost.Ready, error) { return h.MarkersWritten(now, m), nil })
			return
		}
		retry := slices.Clone(next)
		next = nil
		n.after(backoff, func() { tc.deliver(m, retry, min(2*backoff, txnMarkerBackoffMax)) })
	}
	for _, l := range leaders {
		tps := byLeader[l]
		// Through the process, so that an answer (or timeout) reaching
		// a process that died meanwhile is dropped: run on the next
		// incarnation, it restarted the dead coordinator on the dead
		// replica, which wrote to the new process's files and served
		// its stale log (seed 684).
		r.p.callTimeout(l, markersRequest(m, tps), rpcTimeout, func(resp kmsg.Response, err error) {
			outstanding--
			codes := map[txn.TopicPartition]int16{}
			if err == nil {
				for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
					for _, t := range rm.Topics {
						for _, p := range t.Partitions {
							codes[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
						}
					}
				}
			}
			for _, tp := range tps {
				code, answered := codes[tp]
				switch {
				case !answered:
					next = append(next, tp)
				case txnhost.MarkerOutcomeFor(code) == txnhost.MarkerRetry:
					next = append(next, tp)
				case txnhost.MarkerOutcomeFor(code) == txnhost.MarkerFenced:
					n.tracef("markers of %s fenced at %s-%d (code %d)", m.TransactionalID, tp.Topic, tp.Partition, code)
					fenced = true
				}
			}
			if outstanding == 0 {
				round()
			}
		})
	}
	if outstanding == 0 {
		round()
	}
}

func markersRequest(m txnhost.Markers, tps []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	return m.Request(tps)
}

func (tc *txnCoordinator) String() string { return fmt.Sprintf("%s@%d", tc.r.name(), tc.epoch) }
