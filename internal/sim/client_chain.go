package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// The consume-transform-produce chain (Options.TxnCoordinator): chain
// clients share one transactional id, so that each InitProducerId fences
// the other as a restarted instance fences its predecessor. Each
// transaction resumes from the group's committed offset (OffsetFetch with
// require_stable), reads a batch of the data topic's partition
// chainInputPartition read_committed, writes one transformed record per
// input record to chainOutputTopic, adds the group's offsets
// (AddOffsetsToTxn), commits the input position (TxnOffsetCommit) and ends
// the transaction: commit, or now and then abort on purpose. The checks
// are in checker_chain.go.

const (
	chainEndpoint       = clientEndpointBase + 420
	chainClients        = 2
	chainTxnID          = "sim-chain"
	chainGroup          = "sim-chain-group"
	chainOutputTopic    = "sim-chain-out"
	chainInputPartition = 0
	chainAbortChance    = 0.15
	// chainTakeOverChance is, per round of a fenced instance's loop, the
	// chance that it starts over (InitProducerId) and fences the other:
	// about every few seconds, as a restarted instance comes back.
	chainTakeOverChance = 0.03
)

type chainStep int8

const (
	chainFindCoord chainStep = iota
	chainInit
	chainFindGroup
	chainBegin // OffsetFetch, input fetch, AddPartitionsToTxn, produce
	chainOffsets
	chainEnd
)

// chainClient is one instance of the chain.
type chainClient struct {
	c          *Cluster
	self       int32
	coord      int32 // transaction coordinator
	gcoord     int32 // group coordinator
	pid        int64
	epoch      int16
	seq        int32
	step       chainStep
	busy       bool
	in, out    *leaderCache
	n          int
	txn        string // the open transaction
	position   int64  // input offset the open transaction commits
	clean      bool   // false: the transaction must abort
	outputDone bool   // the output batch was acknowledged
	fenced     bool   // the other instance took over: stay down a while
}

func (c *Cluster) newChainClients() []client {
	var out []client
	for i := range chainClients {
		self := int32(chainEndpoint + i)
		out = append(out, &chainClient{c: c, self: self, coord: -1, gcoord: -1, pid: -1, epoch: -1,
			in:  &leaderCache{c: c, self: self, leaders: map[int32]int32{}, topic: topicName},
			out: &leaderCache{c: c, self: self, leaders: map[int32]int32{}, topic: chainOutputTopic}})
	}
	return out
}

func (cc *chainClient) start() { cc.c.s.after(cc.c.s.between(time.Second, 2*time.Second), cc.loop) }

func (cc *chainClient) loop() {
	c := cc.c
	if c.stopped || c.healed {
		return
	}
	c.s.after(c.s.between(20*time.Millisecond, 200*time.Millisecond), cc.loop)
	if cc.busy || cc.fenced && !c.s.chance(chainTakeOverChance) {
		return
	}
	cc.busy, cc.fenced = true, false
	switch cc.step {
	case chainFindCoord:
		cc.findCoordinator(1, chainTxnID, func(id int32) { cc.coord, cc.step = id, chainInit })
	case chainInit:
		cc.initProducer()
	case chainFindGroup:
		cc.findCoordinator(0, chainGroup, func(id int32) { cc.gcoord, cc.step = id, chainBegin })
	case chainBegin:
		cc.fetchCommitted()
	case chainOffsets:
		cc.addOffsets()
	default:
		cc.endTxn()
	}
}

// failed handles an error answer or a lost request: within a
// transaction, the transaction is aborted; a coordinator that moved is
// looked for again; a fenced or confused producer starts over with
// InitProducerId, which aborts what it left open.
func (cc *chainClient) failed(err error) {
	cc.busy = false
	cc.c.tracef("chain client %d: step %d: %v", cc.self, cc.step, err)
	switch {
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping),
		errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.TransactionalIDNotFound):
		cc.step, cc.fenced = chainFindCoord, errors.Is(err, kerr.ProducerFenced)
	case cc.step == chainEnd || cc.step == chainInit:
		// An EndTxn of unknown fate: a new InitProducerId settles it.
		cc.step = chainFindCoord
	case cc.step == chainOffsets:
		cc.clean, cc.step = false, chainEnd
	case cc.txn != "":
		cc.clean, cc.step = false, chainEnd
	case cc.step == chainBegin:
		cc.step = chainFindGroup
	}
}

func (cc *chainClient) findCoordinator(keyType int8, key string, found func(int32)) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorType, req.CoordinatorKey = keyType, key
	to := cc.c.ids[cc.c.s.rng.IntN(len(cc.c.ids))]
	cc.c.call(cc.self, to, req, rpcTimeout, func(resp kmsg.Response, err error) {
		cc.busy = false
		if err == nil {
			if r := resp.(*kmsg.FindCoordinatorResponse); r.ErrorCode == 0 {
				found(r.NodeID)
			}
		}
	})
}

func (cc *chainClient) initProducer() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(chainTxnID), txnTimeoutMs
	cc.c.call(cc.self, cc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.InitProducerIDResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
				cc.busy, cc.pid, cc.epoch, cc.seq, cc.step, cc.txn = false, r.ProducerID, r.ProducerEpoch, 0, chainFindGroup, ""
				return
			}
		}
		cc.failed(err)
	})
}

// fetchCommitted begins a transaction where the group's committed offset
// says the chain stands: require_stable makes the coordinator answer
// UNSTABLE_OFFSET_COMMIT while a transaction's offsets are pending.
func (cc *chainClient) fetchCommitted() {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group, req.RequireStable = chainGroup, true
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = topicName, []int32{chainInputPartition}
	req.Topics = append(req.Topics, t)
	cc.c.call(cc.self, cc.gcoord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			r := resp.(*kmsg.OffsetFetchResponse)
			if err = kerr.ErrorForCode(r.ErrorCode); err == nil && (len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1) {
				err = errors.New("OffsetFetch: unexpected answer shape")
			}
			if err == nil {
				p := r.Topics[0].Partitions[0]
				if err = kerr.ErrorForCode(p.ErrorCode); err == nil {
					cc.c.check.chainOffsetSeen(p.Offset)
					cc.readInput(max(p.Offset, 0))
					return
				}
			}
		}
		if errors.Is(err, kerr.UnstableOffsetCommit) {
			cc.busy = false
			return
		}
		cc.failed(err)
	})
}

// readInput fetches the input partition read_committed from position;
// with records to transform it opens the transaction.
func (cc *chainClient) readInput(from int64) {
	leader, ok := cc.in.leader(chainInputPartition)
	if !ok {
		cc.in.refresh()
		cc.busy = false
		return
	}
	req := consumerFetch(chainInputPartition, from)
	req.IsolationLevel = 1
	cc.c.call(cc.self, leader, req, rpcTimeout, func(resp kmsg.Response, err error) {
		cc.busy = false
		if err != nil {
			cc.in.forget(chainInputPartition)
			return
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
			cc.in.forget(chainInputPartition)
			return
		}
		inputs, next := readCommitted(fr.Topics[0].Partitions[0], from, 1+cc.c.s.rng.IntN(8))
		if len(inputs) == 0 {
			return
		}
		cc.busy = true
		cc.addPartitions(inputs, next)
	})
}

// chainInput is one record read from the input partition.
type chainInput struct {
	offset int64
	value  string
}

// readCommitted reads a read_committed fetch answer as Kafka's consumer
// does (readCommittedBatches): up to limit records at or after from,
// whole batches below the last stable offset, and the position after
// them.
func readCommitted(rp kmsg.FetchResponseTopicPartition, from int64, limit int) ([]chainInput, int64) {
	var out []chainInput
	next := from
	errEnough := errors.New("enough records")
	_ = readCommittedBatches(rp, from, func(h batch.Header, recs []records.Record, deliver bool) error {
		if len(out) >= limit || h.BaseOffset >= rp.LastStableOffset {
			return errEnough
		}
		next = h.LastOffset() + 1
		for _, rec := range recs {
			if off := rec.Offset(h); deliver && off >= from {
				out = append(out, chainInput{offset: off, value: string(rec.Value)})
			}
		}
		return nil
	})
	return out, next
}

func (cc *chainClient) addPartitions(inputs []chainInput, next int64) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = chainTxnID, cc.pid, cc.epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = chainOutputTopic, []int32{0}
	req.Topics = append(req.Topics, t)
	cc.c.call(cc.self, cc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
				for _, p := range rt.Partitions {
					if err == nil {
						err = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
		}
		if err != nil {
			cc.failed(err)
			return
		}
		cc.n++
		if cc.c.opts.chainCommitsStart {
			next = inputs[0].offset
		}
		cc.txn, cc.position, cc.clean = fmt.Sprintf("chain%d-%d", cc.self, cc.n), next, true
		cc.c.check.chainTxnBegun(cc.txn, next)
		values := make([][]byte, len(inputs))
		for i, in := range inputs {
			values[i] = []byte(chainRecord(cc.txn, in))
		}
		b := batch.BuildTransactional(values, cc.c.nowMs(), cc.pid, cc.epoch, cc.seq)
		cc.seq += int32(len(values))
		sendTxnBatch(cc.c, cc.out, chainTxnID, 0, b, 1, func(ok bool) {
			cc.busy, cc.clean, cc.outputDone = false, cc.clean && ok, ok
			cc.step = chainOffsets
		})
	})
}

// chainRecord is the transformed record of input: it names its
// transaction and the input offset and value it came from.
func chainRecord(txn string, in chainInput) string {
	return fmt.Sprintf("%s|%d|%s", txn, in.offset, in.value)
}

// addOffsets adds the group to the transaction (AddOffsetsToTxn), then
// commits the input position in it (TxnOffsetCommit).
func (cc *chainClient) addOffsets() {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = chainTxnID, cc.pid, cc.epoch, chainGroup
	cc.c.call(cc.self, cc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			err = kerr.ErrorForCode(resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
		}
		if err != nil {
			cc.failed(err)
			return
		}
		cc.commitOffset()
	})
}

func (cc *chainClient) commitOffset() {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = chainTxnID, chainGroup, cc.pid, cc.epoch, -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topicName
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = chainInputPartition, cc.position, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	cc.c.call(cc.self, cc.gcoord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			for _, rt := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
				for _, p := range rt.Partitions {
					if err == nil {
						err = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
		}
		if err != nil {
			if errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, errTimeout) {
				cc.gcoord = -1
			}
			cc.failed(err)
			return
		}
		cc.busy, cc.step = false, chainEnd
	})
}

func (cc *chainClient) endTxn() {
	commit := cc.clean && !cc.c.s.chance(chainAbortChance)
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = chainTxnID, cc.pid, cc.epoch, commit
	name := cc.txn
	cc.c.call(cc.self, cc.coord, req, rpcTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			if err = kerr.ErrorForCode(resp.(*kmsg.EndTxnResponse).ErrorCode); err == nil {
				cc.c.check.chainTxnEnded(name, commit)
				cc.c.tracef("chain client %d: transaction %s ended (commit=%v, input position %d)", cc.self, name, commit, cc.position)
				cc.busy, cc.txn, cc.step = false, "", chainFindGroup
				if !cc.outputDone {
					// The batch's sequence may or may not have landed: a
					// new epoch starts the sequences over.
					cc.step = chainFindCoord
				}
				return
			}
		}
		cc.failed(err)
	})
}
