// Package storage is the on-disk log of one partition, laid out like Kafka's:
// a directory of segments named by their base offset (20 digits), each a
// ".log" file of Kafka v2 record batches stored exactly as received plus a
// sparse ".index" (offset -> file position) and a ".timeindex"
// (max timestamp -> offset).
//
// Durability model. Append writes to the operating system's page cache only;
// Sync makes everything appended so far durable and reports the new durable
// end offset. Sync may run on a flusher goroutine while producers keep
// appending (group commit): it captures the end offset first and promises
// only that.
//
// Recovery. Close writes the indexes, syncs, and leaves a ".clean_shutdown"
// marker; Open trusts a cleanly closed log after cheap sanity checks. After an
// unclean stop Open re-validates (size, magic, CRC-32C, offset contiguity)
// every batch of every segment at or after the recovery point, which is the
// base offset of the segment that was active at the last Sync that crossed a
// segment boundary (file "recovery-point"); the last segment is always
// re-validated. The first bad batch and everything after it are dropped, and
// the indexes of re-validated segments are rebuilt from the log. The
// zero-filled write-ahead window after the active segment's last batch
// (zerotail.go) is cut the same way, and is never left at rest by a roll
// or a clean close.
//
// Failure model. A failed write is undone (the file is truncated back) so
// that no partial batch is ever visible, and the log stays usable. A failed
// fsync, or a failed undo, marks the log failed: after an fsync error the
// kernel may already have dropped the dirty pages, so retrying could report
// durability that does not exist. A failed log rejects Append and Sync with
// ErrLogFailed; reads keep working. Reopening the log (which recovers) is the
// way back.
//
// Compaction. Clean compacts the sealed segments of a cleanup.policy=compact
// log as Kafka's log cleaner does (clean.go); offsets never change, so a
// compacted log has gaps, which reads skip (gaps.go); a cleaned segment
// replaces its sources atomically (clean_swap.go).
package storage

import (
	"errors"
	"log/slog"
	"math"
)

// Errors callers map to Kafka error codes. They are returned wrapped.
var (
	// ErrOffsetOutOfRange: the offset is below the log start or above the
	// log end (OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrCorrupt: stored data failed a check (CRC, magic, length, offsets)
	// on read (CORRUPT_MESSAGE / KAFKA_STORAGE_ERROR).
	ErrCorrupt = errors.New("corrupt log data")
	// ErrLogFailed: an earlier I/O error made the log read-only until it is
	// reopened (KAFKA_STORAGE_ERROR).
	ErrLogFailed = errors.New("log failed after an I/O error")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log closed")
	// ErrBatchTooLarge: the batch is larger than segment.bytes
	// (RECORD_LIST_TOO_LARGE), as in Kafka.
	ErrBatchTooLarge = errors.New("record batch larger than segment size")
	// ErrOffsetMismatch: a replica batch does not start at the log end
	// offset.
	ErrOffsetMismatch = errors.New("replica batch base offset is not the log end offset")
	// ErrStaleEpoch: a batch carries a leader epoch older than the latest
	// one in the epoch cache (a fenced leader, or an untruncated follower).
	ErrStaleEpoch = errors.New("leader epoch older than the latest")
	// ErrInvalidBatch: the batch failed validation before being written
	// (CORRUPT_MESSAGE / INVALID_RECORD).
	ErrInvalidBatch = errors.New("invalid record batch")
)

// Config holds the topic settings that shape one partition's log.
type Config struct {
	SegmentBytes       int64 // segment.bytes; roll when the active segment would exceed it
	SegmentMs          int64 // segment.ms; roll when the active segment's first append is older (0 = off)
	RetentionBytes     int64 // retention.bytes; -1 = unlimited; whole segments deleted
	RetentionMs        int64 // retention.ms; -1 = unlimited; by a segment's largest timestamp
	IndexIntervalBytes int   // index.interval.bytes (default 4096)
	MaxIndexBytes      int   // segment.index.bytes (default 10 MiB): roll when an index is full

	// Compaction (see Clean); they matter only when the caller cleans.
	DeleteRetentionMs      int64   // delete.retention.ms: how long tombstones outlive their first cleaning
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio: clean when dirty/total bytes reach it
	MinCompactionLagMs     int64   // min.compaction.lag.ms: records younger than this stay uncompacted
	MaxCompactionLagMs     int64   // max.compaction.lag.ms: clean whatever the ratio once dirty data is this old (<= 0: off)
}

// Kafka's defaults.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * 60 * 60 * 1000
	DefaultRetentionMs        = 7 * 24 * 60 * 60 * 1000
	DefaultIndexIntervalBytes = 4096
	DefaultMaxIndexBytes      = 10 << 20
	DefaultDeleteRetentionMs  = 24 * 60 * 60 * 1000
	DefaultMinCleanableRatio  = 0.5
)

// Limits that keep positions and relative offsets inside the 32-bit index
// fields, and keep a single index from growing without bound.
const (
	maxSegmentBytes  = math.MaxInt32
	minSegmentBytes  = 1024 // smaller is almost certainly a mistake; tests still get many segments
	minMaxIndexBytes = 4 * timeIndexEntrySize
	maxMaxIndexBytes = 1 << 30
)

// DefaultConfig returns Kafka's default topic settings.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          DefaultSegmentMs,
		RetentionBytes:     -1,
		RetentionMs:        DefaultRetentionMs,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		MaxIndexBytes:      DefaultMaxIndexBytes,

		DeleteRetentionMs:      DefaultDeleteRetentionMs,
		MinCleanableDirtyRatio: DefaultMinCleanableRatio,
		MaxCompactionLagMs:     math.MaxInt64,
	}
}

// normalized clamps settings into the ranges the on-disk format can hold,
// replacing zero values with defaults.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	c.SegmentBytes = min(max(c.SegmentBytes, minSegmentBytes), maxSegmentBytes)
	if c.SegmentMs < 0 {
		c.SegmentMs = 0
	}
	if c.RetentionBytes < 0 {
		c.RetentionBytes = -1
	}
	if c.RetentionMs < 0 {
		c.RetentionMs = -1
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.MaxIndexBytes <= 0 {
		c.MaxIndexBytes = d.MaxIndexBytes
	}
	c.MaxIndexBytes = min(max(c.MaxIndexBytes, minMaxIndexBytes), maxMaxIndexBytes)
	c.DeleteRetentionMs = max(c.DeleteRetentionMs, 0)
	c.MinCleanableDirtyRatio = min(max(c.MinCleanableDirtyRatio, 0), 1)
	c.MinCompactionLagMs = max(c.MinCompactionLagMs, 0)
	return c
}

// Options are process-level settings that are not topic config.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	// Fresh says the caller has just created the log's directory, empty,
	// and makes it durable itself: Open then creates the empty log
	// without its fsyncs (the new segment file and the directory entry
	// that names it), and the caller must call the FS's SyncFS on the
	// filesystem holding the directory, and see it succeed, before the
	// log takes a write, is read as in sync or leads (one syncfs for a
	// whole batch of new logs instead of a few fsyncs per log). A crash
	// before that SyncFS can leave the directory empty, or without its
	// segment; it holds no data yet, and the next Open creates what is
	// missing. A log Open finds on disk with a segment or a
	// clean-shutdown marker is opened and synced as usual.
	Fresh bool
	// MayFillAhead, when set, is asked before the log writes n bytes of
	// its zero-filled window past the log end (zerotail.go); false skips
	// the window this time. The zeros take disk space as any write does,
	// so a broker's free-space floor counts them through this (a refill
	// can be 256 KiB per partition, unseen by the floor otherwise) and
	// keeps them out of the headroom it holds back. Called with the log's
	// lock held: it must not call into the log.
	MayFillAhead func(n int64) bool
	// PageCacheWindow, when positive, is how many bytes of its newest
	// durable data the log keeps in the page cache: DropCache advises
	// older durable bytes out (dropbehind.go). 0: never.
	PageCacheWindow int64
}
