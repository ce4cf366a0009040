package batch

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Build makes an uncompressed v2 batch holding one record per value, with
// base offset 0 and no producer id. The broker uses it for its own internal
// logs (metadata records); client data is always stored as sent.
func Build(values [][]byte, timestampMs int64) []byte {
	return BuildProducer(values, timestampMs, -1, -1, -1)
}

// BuildProducer is Build for an idempotent producer: the batch carries its
// producer id, epoch and first sequence (-1, -1, -1 for none). The
// simulator's clients write with it.
func BuildProducer(values [][]byte, timestampMs int64, producerID int64, producerEpoch int16, firstSequence int32) []byte {
	return assemble(nil, values, timestampMs, producerID, producerEpoch, firstSequence)
}

// BuildKeyed is Build with a key per record (keys[i] for values[i]); a nil
// key or value is written as null (a nil value is a tombstone).
func BuildKeyed(keys, values [][]byte, timestampMs int64) []byte {
	return assemble(keys, values, timestampMs, -1, -1, -1)
}

func assemble(keys, values [][]byte, timestampMs int64, producerID int64, producerEpoch int16, firstSequence int32) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		if i < len(keys) {
			r.Key = keys[i]
		}
		// A record starts with its own length as a varint; encode once to
		// measure, then again with the right length.
		probe := r.AppendTo(nil)
		r.Length = int32(len(probe) - 1) // the probe's zero length took one byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  timestampMs,
		MaxTimestamp:    timestampMs,
		ProducerID:      producerID,
		ProducerEpoch:   producerEpoch,
		FirstSequence:   firstSequence,
		NumRecords:      int32(len(values)),
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
