// Package logreplay reads a coordinator's partition (__consumer_offsets,
// __transaction_state) from its log start to its end, batch by batch, so
// a new coordinator rebuilds its state by replay. It touches only the
// log it is given: a runtime calls it outside its serialisation.
package logreplay

import (
	"fmt"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// Log is what a replay reads of a partition (storage.Log has it).
type Log interface {
	LogStartOffset() int64
	LogEndOffset() int64
	Read(offset int64, maxBytes int, upTo int64, minOneBatch bool) ([]byte, error)
}

// MaxBatchBytes bounds the decompressed size of one batch: a compressed
// batch of coordinator records may be large (Kafka accepts offset commits
// up to message.max.bytes before compression), and refusing one would
// keep every coordinator of the partition unavailable.
const MaxBatchBytes = 64 << 20

// readBytes is how much one read of the log asks for.
const readBytes = 1 << 20

// Scan hands every batch of the log to fn in offset order, from the log
// start to the log end as of the call, and returns that end: nothing else
// appends to a coordinator's partition while it loads (the coordinator is
// its only writer, besides transaction markers to __consumer_offsets,
// which the coordinator that sent them waits for). A read that returns
// nothing below the end stops the scan: compaction removed everything
// from there on (the active segment, never compacted, is empty).
func Scan(log Log, name string, fn func(h batch.Header, recs []records.Record) error) (int64, error) {
	return ScanRaw(log, name, func(_ []byte, h batch.Header, recs []records.Record) error { return fn(h, recs) })
}

// ScanRaw is Scan that also hands fn each whole batch as stored (for
// readers of control batches: batch.ParseMarker).
func ScanRaw(log Log, name string, fn func(raw []byte, h batch.Header, recs []records.Record) error) (int64, error) {
	end := log.LogEndOffset()
	off := log.LogStartOffset()
	for off < end {
		data, err := log.Read(off, readBytes, end, true)
		if err != nil {
			return 0, fmt.Errorf("read %s at %d: %w", name, off, err)
		}
		if len(data) == 0 {
			break
		}
		err = batch.Split(data, func(b []byte) error {
			h, recs, err := records.Decode(b, MaxBatchBytes)
			if err != nil {
				return fmt.Errorf("batch at %d: %w", off, err)
			}
			off = h.LastOffset() + 1
			return fn(b, h, recs)
		})
		if err != nil {
			return 0, fmt.Errorf("load %s: %w", name, err)
		}
	}
	return end, nil
}
