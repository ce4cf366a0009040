package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// txnCoordClientEndpoint is the first of the coordinator clients'
// endpoints (after client_txn.go's driver and reader).
const txnCoordClientEndpoint = clientEndpointBase + 410

// txnClients share txnIDs, so that an InitProducerId of one fences
// another's transaction, as a restarted instance fences its predecessor.
const (
	txnClients = 3
	txnIDs     = 2
	// txnTimeoutMs is the clients' transaction.timeout.ms: a client that
	// stalls (its coordinator unreachable) past it is aborted by the
	// coordinator.
	txnTimeoutMs = 3000
)

// txnClient drives the transaction coordinator's APIs as a transactional
// producer does: FindCoordinator (key type 1), InitProducerId (now and
// then with its own producer id and epoch, KIP-360's recovery),
// AddPartitionsToTxn of the data topic's partitions, one transactional
// batch to each, EndTxn commit or abort (abort whenever a batch's fate is
// unknown).
type txnClient struct {
	c     *Cluster
	self  int32
	id    string
	coord int32 // -1: to be found
	pid   int64
	epoch int16
	state txnClientState
	busy  bool
	// lc finds the data topic's leaders for the transaction's batches;
	// seq is the next sequence per partition for pid and epoch.
	lc  *leaderCache
	seq map[int32]int32
	// n numbers this client's transactions; txn names the open one and
	// parts are its partitions; clean is false once a batch's fate is
	// unknown (the transaction must then abort).
	n     int
	txn   string
	parts []int32
	clean bool
	// tried holds every partition an AddPartitionsToTxn of the current
	// transaction named, answered or not (a lost answer may have added
	// them); strays goes to a partition outside it.
	tried  map[int32]bool
	strays int
	// tv2: the client speaks transaction version 2 (KIP-890 part 2) as
	// franz-go does with transaction.version 2 finalized: no
	// AddPartitionsToTxn (Produce v12 has the leader add the partition),
	// EndTxn v5, whose answer carries the next epoch.
	tv2 bool
}

type txnClientState int8

const (
	txnNeedInit txnClientState = iota
	txnIdle                    // initialized, no transaction open
	txnOpen                    // partitions added
)

func (c *Cluster) newTxnClients() []client {
	var out []client
	for i := range txnClients {
		self := int32(txnCoordClientEndpoint + i)
		out = append(out, &txnClient{c: c, self: self, id: fmt.Sprintf("sim-tx-%d", i%txnIDs), coord: -1, pid: -1, epoch: -1,
			lc: &leaderCache{c: c, self: self, leaders: map[int32]int32{}, topic: topicName}, seq: map[int32]int32{},
			tv2: c.s.chance(0.5)})
	}
	return out
}

func (tc *txnClient) start() { tc.c.s.after(tc.c.s.between(time.Second, 2*time.Second), tc.loop) }

func (tc *txnClient) loop() {
	c := tc.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 200*time.Millisecond), tc.loop)
	if tc.busy {
		return
	}
	tc.busy = true
	switch {
	case tc.coord < 0:
		tc.findCoordinator()
	case tc.state == txnNeedInit:
		tc.initProducer()
	case tc.state == txnIdle && tc.tv2:
		tc.beginV2()
	case tc.state == txnIdle:
		tc.addPartitions()
	default:
		tc.endTxn(c.s.chance(0.7))
	}
}

// failed handles an error answer or a lost request: the coordinator is
// looked for again after NOT_COORDINATOR and kin; a fenced producer
// starts over as a new instance.
func (tc *txnClient) failed(err error) {
	tc.busy = false
	switch {
	case errors.Is(err, errTimeout), errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable),
		errors.Is(err, kerr.CoordinatorLoadInProgress):
		tc.coord = -1
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping),
		errors.Is(err, kerr.InvalidTxnState):
		tc.state, tc.pid, tc.epoch = txnNeedInit, -1, -1
	}
}

func (tc *txnClient) findCoordinator() {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorType, req.CoordinatorKey = 1, tc.id
	to := tc.c.ids[tc.c.s.rng.IntN(len(tc.c.ids))]
	tc.c.call(tc.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		tc.busy = false
		if err != nil {
			return
		}
		if r := resp.(*kmsg.FindCoordinatorResponse); r.ErrorCode == 0 {
			tc.coord = r.NodeID
		}
	})
}

func (tc *txnClient) initProducer() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(tc.id), txnTimeoutMs
	if tc.pid >= 0 && tc.c.s.chance(0.5) {
		req.ProducerID, req.ProducerEpoch = tc.pid, tc.epoch // KIP-360
	}
	tc.c.call(tc.self, tc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.InitProducerIDResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
				tc.c.check.txnInitAnswered(tc.id, r.ProducerID, r.ProducerEpoch)
				clear(tc.tried)
				tc.busy, tc.pid, tc.epoch, tc.state = false, r.ProducerID, r.ProducerEpoch, txnIdle
				clear(tc.seq)
				return
			}
		}
		tc.failed(err)
		if errors.Is(err, kerr.ProducerFenced) {
			tc.pid = -1
		}
	})
}

// pickParts draws the next transaction's partitions (at least one) and
// counts them as tried: a request naming them may have added them.
func (tc *txnClient) pickParts() []int32 {
	var parts []int32
	for p := range tc.c.opts.Partitions {
		if tc.c.s.chance(0.6) || len(parts) == 0 && p == tc.c.opts.Partitions-1 {
			parts = append(parts, int32(p))
		}
	}
	if tc.tried == nil {
		tc.tried = map[int32]bool{}
	}
	for _, p := range parts {
		tc.tried[p] = true
	}
	return parts
}

// open starts the client's next transaction over parts and writes it.
func (tc *txnClient) open(parts []int32) {
	tc.state = txnOpen
	tc.n++
	tc.txn, tc.parts, tc.clean = fmt.Sprintf("c%d-%d", tc.self, tc.n), parts, true
	tc.produceAll()
}

// beginV2 opens a transaction version 2 transaction: no request, the
// produces add their partitions.
func (tc *txnClient) beginV2() { tc.open(tc.pickParts()) }

func (tc *txnClient) addPartitions() {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = tc.id, tc.pid, tc.epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic = topicName
	t.Partitions = tc.pickParts()
	req.Topics = append(req.Topics, t)
	parts := t.Partitions
	tc.c.call(tc.self, tc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
				for _, p := range rt.Partitions {
					if err == nil {
						err = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
			if err == nil {
				tc.open(parts)
				return
			}
		}
		tc.failed(err)
	})
}

// produceAll writes one transactional batch to each partition of the
// open transaction, then frees the client for EndTxn.
func (tc *txnClient) produceAll() {
	left := len(tc.parts)
	for _, p := range tc.parts {
		count := 1 + tc.c.s.rng.IntN(3)
		values := make([][]byte, count)
		for i := range values {
			v := fmt.Sprintf("%s-%d-%d", tc.txn, p, i)
			values[i] = []byte(v)
			tc.c.check.txnCoordRecord(v, tc.txn)
		}
		b := batch.BuildTransactional(values, tc.c.nowMs(), tc.pid, tc.epoch, tc.seq[p])
		tc.seq[p] += int32(count)
		name := tc.txn
		version := int16(9)
		if tc.tv2 {
			version = 12
		}
		sendTxnBatchAt(tc.c, tc.lc, tc.id, p, b, version, 1, func(ok bool) {
			if ok {
				tc.c.check.txnBatchAcked(name, p, count)
			}
			tc.clean = tc.clean && ok
			if left--; left == 0 {
				tc.busy = false
			}
		})
	}
	tc.maybeStray()
}

// maybeStray now and then sends a transactional batch to a partition the
// transaction never added, as a buggy producer (or a batch delayed past
// its transaction's end) would: with KIP-890's verification the leader
// must refuse it, since no coordinator would ever end the transaction it
// opens there (a hanging transaction, whose records a later transaction's
// marker would wrongly commit). Its records are never committable.
func (tc *txnClient) maybeStray() {
	c := tc.c
	if !c.verifiesTxns() && !c.opts.txnVerifyOff || !c.s.chance(0.15) {
		return
	}
	var free []int32
	for p := range int32(c.opts.Partitions) {
		if !tc.tried[p] {
			free = append(free, p)
		}
	}
	if len(free) == 0 {
		return
	}
	p := free[c.s.rng.IntN(len(free))]
	tc.strays++
	c.check.stats.TxnStrays++
	name := fmt.Sprintf("%s-stray%d", tc.txn, tc.strays)
	v := name + "-0"
	tc.c.check.txnCoordRecord(v, name)
	b := batch.BuildTransactional([][]byte{[]byte(v)}, c.nowMs(), tc.pid, tc.epoch, tc.seq[p])
	pid, epoch := tc.pid, tc.epoch
	sendTxnBatch(c, tc.lc, tc.id, p, b, maxSendAttempts, func(ok bool) {
		if ok {
			if tc.pid == pid && tc.epoch == epoch {
				tc.seq[p]++
			}
			c.check.txnStrayAcked(tc.id, name, p)
		}
	})
}

// quickNext takes a transaction version 2 client's next step at once
// after its end's answer, as franz-go does (its next transaction's first
// produce, or GroupTransactSession's abort after a rebalance): the
// previous transaction's markers are likely still being written, so the
// leaders' adds meet its prepared state at the coordinator (held there
// until it completes), and so does the end (CONCURRENT_TRANSACTIONS, the
// client retries at its next step).
func (tc *txnClient) quickNext() {
	tc.c.check.stats.TxnQuickNext++
	tc.busy = true
	tc.c.s.after(0, func() {
		if tc.c.stopped || tc.c.healed || tc.state != txnIdle {
			tc.busy = false
			return
		}
		if tc.c.s.chance(0.5) {
			tc.beginV2()
			return
		}
		// An abort of a transaction that added nothing.
		tc.open(nil)
		tc.endTxn(false)
	})
}

func (tc *txnClient) endTxn(commit bool) {
	commit = commit && tc.clean
	if commit {
		tc.c.check.txnCoordCommitSent(tc.txn)
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	if tc.tv2 {
		req.Version = 5
	}
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = tc.id, tc.pid, tc.epoch, commit
	sentAt := tc.c.s.now
	pid, epoch, name := tc.pid, tc.epoch, tc.txn
	tc.c.call(tc.self, tc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.EndTxnResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
				tc.c.check.txnEndAcked(tc.id, pid, epoch, commit, sentAt)
				tc.c.check.txnEndOutcome(name, commit)
				if r.Version >= 5 && r.ProducerID >= 0 {
					// Version 2: the next transaction is the next epoch's
					// (a new producer id's, if it rotated): sequences
					// start again.
					if r.ProducerID != tc.pid || r.ProducerEpoch != tc.epoch {
						clear(tc.seq)
					}
					tc.pid, tc.epoch = r.ProducerID, r.ProducerEpoch
					tc.c.check.stats.TxnV2Ends++
				}
				clear(tc.tried)
				tc.busy, tc.state = false, txnIdle
				if tc.tv2 && tc.c.s.chance(0.3) {
					tc.quickNext()
				}
				return
			}
		}
		tc.failed(err)
	})
}
