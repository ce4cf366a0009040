package group

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offset commits (TxnOffsetCommit, KIP-98; KIP-447's group
// checks), as Kafka's GroupMetadata keeps them: a transaction's offsets
// are written to the partition as a transactional batch of its producer,
// held per producer id as pending, invisible to OffsetFetch, and made
// committed offsets when the producer's COMMIT marker on this partition is
// committed (TxnCompleted); an ABORT marker drops them.

// TxnCommitRequest is a TxnOffsetCommit request. MemberID "" and
// Generation -1 (v0-2, or a producer outside group management) skip the
// member checks, as Kafka does.
type TxnCommitRequest struct {
	GroupID       string
	ProducerID    int64
	ProducerEpoch int16
	MemberID      string
	InstanceID    string
	Generation    int32
	Offsets       []CommitOffset
	// VerifyTxn and VerificationGuard go with the write (TxnBatch): the
	// __consumer_offsets leader refuses the batch unless the guard of
	// the transaction's verification with its coordinator still stands
	// (KIP-890 part 1; api.ProduceParams).
	VerifyTxn         bool
	VerificationGuard uint64
}

// TxnBatch is set on an Output whose Records are a transaction's offsets:
// the runtime writes them as one transactional batch of the producer (its
// id and epoch, the transactional attribute, base sequence 0 as Kafka's
// coordinator writes them; the partition checks only the epoch of a
// coordinator's batch), so that the partition's producer state and the
// producer's markers cover them like any transactional data.
type TxnBatch struct {
	ProducerID        int64
	ProducerEpoch     int16
	VerifyTxn         bool
	VerificationGuard uint64
}

// txnProducer is what the coordinator knows of a producer that commits
// offsets here: its latest epoch on this partition (rebuilt from the log
// at replay), and the groups holding its pending offsets.
type txnProducer struct {
	epoch  int16
	groups map[string]struct{}
}

func (c *Coordinator) nextCommit() uint64 {
	c.commitSeq++
	return c.commitSeq
}

// producer returns producerID's state, at epoch if that is newer.
func (c *Coordinator) producer(producerID int64, epoch int16) *txnProducer {
	p := c.txnProducers[producerID]
	if p == nil {
		p = &txnProducer{epoch: epoch, groups: map[string]struct{}{}}
		c.txnProducers[producerID] = p
	}
	p.epoch = max(p.epoch, epoch)
	return p
}

func (g *Group) hasTxnOffset(tp TopicPartition) bool {
	for _, offs := range g.txnOffsets {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// TxnCommitOffsets handles TxnOffsetCommit. The answer may be sent once
// the Output's records (a transactional batch, Output.Txn) are committed.
// Err is for the whole request; otherwise there is one result per offset.
func (c *Coordinator) TxnCommitOffsets(now int64, req TxnCommitRequest) ([]PartitionError, Output) {
	var out Output
	g := c.groups[req.GroupID]
	if g == nil {
		// Kafka creates the group: a producer may commit offsets for a
		// group nobody has joined.
		g = newGroup(c, req.GroupID, now)
		c.groups[req.GroupID] = g
	}
	err := g.validateTxnCommit(req)
	if err == nil {
		if p := c.txnProducers[req.ProducerID]; p != nil && req.ProducerEpoch < p.epoch {
			// The partition's producer state would refuse the batch;
			// answered before writing, as Kafka's append answers it.
			err = kerr.InvalidProducerEpoch
		}
	}
	results := c.eachOffset(now, req.Offsets, err, func(tp TopicPartition, e offsetEntry) {
		g.addTxnOffset(req.ProducerID, tp, e)
		out.Records = append(out.Records, offsetCommitRecord(g.id, tp, e))
	})
	if len(out.Records) > 0 {
		p := c.producer(req.ProducerID, req.ProducerEpoch)
		p.groups[g.id] = struct{}{}
		out.Txn = &TxnBatch{ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
			VerifyTxn: req.VerifyTxn, VerificationGuard: req.VerificationGuard}
	}
	c.changed(g)
	return results, out
}

// validateTxnCommit is Kafka's doTxnCommitOffsets check: a static member
// replaced by another is fenced, a member id (when given) must be a
// member, a generation (when given) the current one. Unlike OffsetCommit,
// a rebalance in progress does not refuse the commit.
func (g *Group) validateTxnCommit(req TxnCommitRequest) error {
	if req.InstanceID != "" {
		if id, ok := g.static[req.InstanceID]; ok && id != req.MemberID {
			return kerr.FencedInstanceID
		}
	}
	if req.MemberID != "" && g.members[req.MemberID] == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation >= 0 && req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	return nil
}

func (g *Group) addTxnOffset(producerID int64, tp TopicPartition, e offsetEntry) {
	offs := g.txnOffsets[producerID]
	if offs == nil {
		offs = make(map[TopicPartition]offsetEntry)
		g.txnOffsets[producerID] = offs
	}
	offs[tp] = e
}

// TxnCompleted ends producerID's transaction on this partition once its
// marker is committed: on commit its pending offsets become the groups'
// committed offsets, except where an offset committed after them is
// already there (Kafka compares their log offsets); on abort they are
// dropped. It writes nothing: the marker in the log is the record. A
// producer with nothing pending here is ignored.
func (c *Coordinator) TxnCompleted(producerID int64, commit bool) {
	p := c.txnProducers[producerID]
	if p == nil {
		return
	}
	ids := make([]string, 0, len(p.groups))
	for id := range p.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := c.groups[id]
		if g == nil {
			continue
		}
		offs := g.txnOffsets[producerID]
		delete(g.txnOffsets, producerID)
		if commit {
			for tp, e := range offs {
				if cur, ok := g.offsets[tp]; !ok || cur.order < e.order {
					g.offsets[tp] = e
				}
			}
		}
		c.changed(g)
	}
	clear(p.groups)
}

// ApplyTxnBatch loads a transactional batch of producerID's offset
// commits read from the log (like Apply, before serving): its offset
// commits become pending, and the producer's epoch follows the batch's.
// Records of other types are skipped, as Kafka skips
// them in a transactional batch.
func (c *Coordinator) ApplyTxnBatch(now int64, b TxnBatch, recs []Record) error {
	p := c.producer(b.ProducerID, b.ProducerEpoch)
	var firstErr error
	for _, rec := range recs {
		if err := c.applyTxnOffset(now, b.ProducerID, p, rec); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (c *Coordinator) applyTxnOffset(now int64, producerID int64, p *txnProducer, rec Record) error {
	if len(rec.Key) < 2 {
		return fmt.Errorf("group record: key of %d bytes has no version", len(rec.Key))
	}
	if v := int16(uint16(rec.Key[0])<<8 | uint16(rec.Key[1])); v != 0 && v != 1 {
		return nil
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return fmt.Errorf("group record: transactional offset commit key: %w", err)
	}
	if rec.Value == nil {
		return fmt.Errorf("group record: transactional tombstone for group %q %s-%d", k.Group, k.Topic, k.Partition)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(rec.Value); err != nil {
		return fmt.Errorf("group record: transactional offset commit of group %q %s-%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	g := c.loadedGroup(k.Group, now)
	g.addTxnOffset(producerID, TopicPartition{Topic: k.Topic, Partition: k.Partition}, c.loadedOffset(v))
	p.groups[g.id] = struct{}{}
	c.changed(g)
	return nil
}

// ApplyMarker loads a transaction marker read from the log: the
// producer's transaction ends as TxnCompleted ends it, and a marker of a
// newer epoch (an abort after the producer was fenced) fences the older
// epoch's commits.
func (c *Coordinator) ApplyMarker(producerID int64, producerEpoch int16, commit bool) {
	if p := c.txnProducers[producerID]; p != nil {
		c.producer(producerID, producerEpoch)
		c.TxnCompleted(producerID, commit)
	}
}
