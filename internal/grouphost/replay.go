package grouphost

import (
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/group"
	"github.com/skein-log/skein/internal/logreplay"
	"github.com/skein-log/skein/internal/records"
)

// Log is what loading reads of a __consumer_offsets partition
// (storage.Log has it).
type Log = logreplay.Log

// MaxLoadBatchBytes bounds the decompressed size of one batch read while
// loading (logreplay.MaxBatchBytes).
const MaxLoadBatchBytes = logreplay.MaxBatchBytes

// Loaded is a coordinator rebuilt from its partition's log.
type Loaded struct {
	Coordinator *group.Coordinator
	// End is the log end offset the replay read to: answers wait until
	// it is committed.
	End int64
	// Problems are records that could not be applied and were skipped.
	Problems []string
}

// Replay builds a coordinator and applies every record of the partition
// to it in offset order, from the log start to the log end as of now:
// nothing else appends to the partition while it loads (the coordinator
// is its only writer, and clients may not produce to it). It reads
// storage directly and may take a while; it touches no Host, so a runtime
// calls it outside its serialisation and then Activate.
//
// Transactional batches hold offsets committed in transactions
// (TxnOffsetCommit): they load as pending offsets of their producer, and
// the producer's control batch (its COMMIT or ABORT marker, read with
// batch.ParseMarker) commits or drops them, so a new coordinator holds
// the same committed and pending offsets as the one before. A read that returns nothing below the log end ends the replay:
// compaction removed everything from there on (the active segment, never
// compacted, is empty). One unreadable record is skipped and reported,
// since it must not keep every group of the partition unavailable.
func Replay(cfg group.Config, nonce uint64, log Log, name string, now int64) (Loaded, error) {
	c, err := group.New(cfg, nonce)
	if err != nil {
		return Loaded{}, fmt.Errorf("load %s: %w", name, err)
	}
	l := Loaded{Coordinator: c}
	end, err := logreplay.ScanRaw(log, name, func(raw []byte, h batch.Header, recs []records.Record) error {
		switch {
		case h.IsControl():
			m, err := batch.ParseMarker(raw)
			if err != nil {
				l.Problems = append(l.Problems, fmt.Sprintf("%s: skipping unreadable control batch at %d: %v", name, h.BaseOffset, err))
				return nil
			}
			c.ApplyMarker(h.ProducerID, h.ProducerEpoch, m.Commit)
		case h.IsTransactional():
			recs := groupRecords(recs)
			tb := group.TxnBatch{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch}
			if err := c.ApplyTxnBatch(now, tb, recs); err != nil {
				l.Problems = append(l.Problems, fmt.Sprintf("%s: skipping unreadable transactional group record in batch at %d: %v", name, h.BaseOffset, err))
			}
		default:
			for _, r := range recs {
				if err := c.Apply(now, group.Record{Key: r.Key, Value: r.Value}); err != nil {
					l.Problems = append(l.Problems, fmt.Sprintf("%s: skipping unreadable group record at %d: %v", name, r.Offset(h), err))
				}
			}
		}
		return nil
	})
	if err != nil {
		return Loaded{}, err
	}
	l.End = end
	return l, nil
}

func groupRecords(recs []records.Record) []group.Record {
	out := make([]group.Record, len(recs))
	for i, r := range recs {
		out[i] = group.Record{Key: r.Key, Value: r.Value}
	}
	return out
}
