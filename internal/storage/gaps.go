package storage

import (
	"fmt"
	"path/filepath"

	"github.com/skein-log/skein/internal/vfs"
)

// offsetGapsFile marks a partition whose offsets may skip. A log written
// only by its own appends is contiguous, and recovery and reads check that
// (the base offset lies outside the CRC, so contiguity is what catches a
// damaged one). Compaction removes batches, and a follower copies a
// compacted leader's log with its gaps, so such logs are checked for
// strictly increasing offsets instead, as Kafka checks every log. The
// marker is made durable before the first gap is, and never removed.
const offsetGapsFile = "offset-gaps"

// follows reports whether a batch starting at base may come after a batch
// (or segment start) ending just below prevEnd.
func follows(prevEnd, base int64, gaps bool) bool {
	if gaps {
		return base >= prevEnd
	}
	return base == prevEnd
}

// segmentsAbut reports whether a segment whose batches end below next may
// be followed by one starting at nextBase.
func segmentsAbut(next, nextBase int64, gaps bool) bool {
	if gaps {
		return next <= nextBase
	}
	return next == nextBase
}

// allowGapsLocked durably marks the log as possibly holding offset gaps.
// Callers hold mu exclusively (or own the log while opening it).
func (l *Log) allowGapsLocked() error {
	if l.gaps {
		return nil
	}
	path := filepath.Join(l.dir, offsetGapsFile)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, path, []byte("offsets in this log may skip (log compaction)\n")); err != nil {
		return fmt.Errorf("mark %s as having offset gaps: %w", l.dir, err)
	}
	l.gaps = true
	return nil
}

// OffsetGaps reports whether the log may hold offset gaps.
func (l *Log) OffsetGaps() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.gaps
}
