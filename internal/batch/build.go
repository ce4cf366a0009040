package batch

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KeyValue is one record of a batch the broker builds itself. A nil Value
// is a null value (a tombstone in a compacted topic).
type KeyValue struct {
	Key   []byte
	Value []byte
}

// Build makes an uncompressed v2 batch holding one record per value, with
// base offset 0 and no producer id. The broker uses it for its own internal
// logs (metadata records); client data is always stored as sent.
func Build(values [][]byte, timestampMs int64) []byte {
	return assemble(valuesOnly(values), timestampMs, 0, -1, -1, -1)
}

// BuildKeyed is Build for records with keys (the group coordinator's
// __consumer_offsets records).
func BuildKeyed(kvs []KeyValue, timestampMs int64) []byte {
	return assemble(kvs, timestampMs, 0, -1, -1, -1)
}

// BuildKeyedTransactional is BuildKeyed for a transactional batch of a
// producer, base sequence 0: the group coordinator's offsets committed in
// a transaction (TxnOffsetCommit), written as Kafka's coordinator writes
// them.
func BuildKeyedTransactional(kvs []KeyValue, timestampMs int64, producerID int64, producerEpoch int16) []byte {
	return assemble(kvs, timestampMs, TransactionalBit, producerID, producerEpoch, 0)
}

// BuildProducer is Build for an idempotent producer: the batch carries its
// producer id, epoch and first sequence (-1, -1, -1 for none). The
// simulator's clients write with it.
func BuildProducer(values [][]byte, timestampMs int64, producerID int64, producerEpoch int16, firstSequence int32) []byte {
	return assemble(valuesOnly(values), timestampMs, 0, producerID, producerEpoch, firstSequence)
}

// BuildTransactional is BuildProducer for a transactional producer: the
// batch carries the transactional attribute (the simulator's and the
// tests' transactional clients write with it).
func BuildTransactional(values [][]byte, timestampMs int64, producerID int64, producerEpoch int16, firstSequence int32) []byte {
	return assemble(valuesOnly(values), timestampMs, TransactionalBit, producerID, producerEpoch, firstSequence)
}

func valuesOnly(values [][]byte) []KeyValue {
	kvs := make([]KeyValue, len(values))
	for i, v := range values {
		kvs[i].Value = v
	}
	return kvs
}

func assemble(kvs []KeyValue, timestampMs int64, attributes int16, producerID int64, producerEpoch int16, firstSequence int32) []byte {
	var recs []byte
	for i, kv := range kvs {
		r := kmsg.Record{OffsetDelta: int32(i), Key: kv.Key, Value: kv.Value}
		// A record starts with its own length as a varint; encode once to
		// measure, then again with the right length.
		probe := r.AppendTo(nil)
		r.Length = int32(len(probe) - 1) // the probe's zero length took one byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		Magic:           2,
		Attributes:      attributes,
		LastOffsetDelta: int32(len(kvs) - 1),
		FirstTimestamp:  timestampMs,
		MaxTimestamp:    timestampMs,
		ProducerID:      producerID,
		ProducerEpoch:   producerEpoch,
		FirstSequence:   firstSequence,
		NumRecords:      int32(len(kvs)),
		Records:         recs,
	}
	rb.Length = int32(HeaderSize - LogOverhead + len(recs))
	b := rb.AppendTo(nil)
	crc := CRC(b)
	b[offCRC] = byte(crc >> 24)
	b[offCRC+1] = byte(crc >> 16)
	b[offCRC+2] = byte(crc >> 8)
	b[offCRC+3] = byte(crc)
	return b
}
