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
// Control batches (transaction markers) carry no group state and are
// skipped. A read that returns nothing below the log end ends the replay:
// compaction removed everything from there on (the active segment, never
// compacted, is empty). One unreadable record is skipped and reported,
// since it must not keep every group of the partition unavailable.
func Replay(cfg group.Config, nonce uint64, log Log, name string, now int64) (Loaded, error) {
	c, err := group.New(cfg, nonce)
	if err != nil {
		return Loaded{}, fmt.Errorf("load %s: %w", name, err)
	}
	l := Loaded{Coordinator: c}
	end, err := logreplay.Scan(log, name, func(h batch.Header, recs []records.Record) error {
		if h.IsControl() {
			return nil
		}
		for _, r := range recs {
			if err := c.Apply(now, group.Record{Key: r.Key, Value: r.Value}); err != nil {
				l.Problems = append(l.Problems, fmt.Sprintf("%s: skipping unreadable group record at %d: %v", name, r.Offset(h), err))
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
