package txn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one __transaction_state record. A nil Value is a tombstone:
// the transactional id expired.
type Record struct {
	Key   []byte
	Value []byte
}

// Versions Kafka writes: key 0; value 0, or 1 (flexible, with the
// previous producer id as a tagged field) from Kafka 4.0.
const (
	keyVersion     = 0
	valueVersion   = 0
	valueVersionV1 = 1
)

// ErrNotTransactionRecord marks a record of another kind (a newer key
// version): replay skips it.
var ErrNotTransactionRecord = errors.New("not a transaction metadata record")

func recordKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

// record is t's state in Kafka's TransactionLogValue format. The previous
// and next producer ids and the client's transaction version are kept
// only in version 1 (Kafka 4.0's tagged fields), written when one of them
// is set, so older readers can still read every other record.
func record(t *Txn) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = t.ProducerID, t.Epoch, t.TimeoutMs
	v.State = kmsg.TransactionState(t.State)
	v.LastUpdateTimestamp, v.StartTimestamp = t.UpdateMs, t.StartMs
	if t.PrevProducerID >= 0 || t.NextProducerID >= 0 || t.ClientTV > 0 {
		// Kafka's tagged fields of version 1 (KIP-890 part 2).
		v.Version = valueVersionV1
		v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = t.PrevProducerID, t.NextProducerID, t.ClientTV
	}
	for _, tp := range t.Partitions {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		vt := kmsg.NewTxnMetadataValueTopic()
		vt.Topic, vt.Partitions = tp.Topic, []int32{tp.Partition}
		v.Topics = append(v.Topics, vt)
	}
	return Record{Key: recordKey(t.ID), Value: v.AppendTo(nil)}
}

func tombstone(id string) Record { return Record{Key: recordKey(id)} }

// decode reads a record: its transactional id and state (nil for a
// tombstone).
func decode(r Record) (string, *Txn, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", nil, fmt.Errorf("transaction log key: %w", err)
	}
	if k.Version != keyVersion {
		return "", nil, fmt.Errorf("%w: key version %d", ErrNotTransactionRecord, k.Version)
	}
	if r.Value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "", nil, fmt.Errorf("transaction log value of %q: %w", k.TransactionalID, err)
	}
	if v.Version < 0 || v.Version > valueVersionV1 {
		return "", nil, fmt.Errorf("transaction log value of %q: unknown version %d", k.TransactionalID, v.Version)
	}
	s := State(v.State)
	if s < Empty || s > PrepareEpochFence || s == PrepareEpochFence {
		// PrepareEpochFence is never written (Kafka keeps it in memory).
		return "", nil, fmt.Errorf("transaction log value of %q: state %d", k.TransactionalID, v.State)
	}
	t := &Txn{
		ID: k.TransactionalID, ProducerID: v.ProducerID, PrevProducerID: -1, NextProducerID: -1, Epoch: v.ProducerEpoch,
		LastEpoch: -1, TimeoutMs: v.TimeoutMillis, State: s,
		StartMs: v.StartTimestamp, UpdateMs: v.LastUpdateTimestamp,
	}
	if v.Version >= valueVersionV1 {
		t.PrevProducerID, t.NextProducerID, t.ClientTV = v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion
	}
	for _, vt := range v.Topics {
		for _, p := range vt.Partitions {
			t.Partitions = append(t.Partitions, TopicPartition{vt.Topic, p})
		}
	}
	t.Partitions = normalize(t.Partitions)
	return k.TransactionalID, t, nil
}

// normalize sorts partitions and drops repeats.
func normalize(tps []TopicPartition) []TopicPartition {
	slices.SortFunc(tps, compareTP)
	return slices.Compact(tps)
}

func compareTP(a, b TopicPartition) int {
	switch {
	case a.Topic < b.Topic:
		return -1
	case a.Topic > b.Topic:
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// DecodeRecord reads one __transaction_state record: the transactional
// id and its state, nil for a tombstone (checkers replay logs with it).
func DecodeRecord(r Record) (string, *Txn, error) { return decode(r) }
