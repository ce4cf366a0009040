package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/vfs"
)

// Files of the log cleaner.
const (
	// cleanerCheckpointFile holds the offset below which the log is clean
	// (Kafka keeps the same value in cleaner-offset-checkpoint).
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	// cleanerSwapFile records a swap in progress: "base end" says that
	// <base>.log.cleaned replaces every segment in [base, end).
	cleanerSwapFile = "cleaner-swap"
	cleanedSuffix   = ".cleaned"
)

// How a cleaned segment replaces the segments it was made from, so that a
// crash at any point leaves either the old segments or the new one (never
// both, never neither):
//
//  1. <base>.log.cleaned and its indexes (.index.cleaned,
//     .timeindex.cleaned) are written and fsynced, and the directory
//     synced.
//  2. The swap record (cleaner-swap: base, end) is written durably. From
//     here on the swap is decided: recovery finishes it.
//  3. The old segments' index files are removed, the .cleaned files are
//     renamed over <base>.log, .index and .timeindex, the other old
//     segments of [base, end) are removed, and the directory is synced.
//  4. The swap record is removed durably.
//
// Open finishes a recorded swap before it loads segments (finishSwap: the
// same step 3, idempotent: it first drops the base segment's index files,
// which may be the old ones, so an index is rebuilt rather than trusted
// when its .cleaned file was already renamed) and deletes leftover .cleaned
// files without a record: that swap had not been decided.

// loadCleanerState reads the cleaner's files at Open and finishes an
// interrupted swap.
func (l *Log) loadCleanerState() error {
	var err error
	if l.gaps, err = vfs.Exists(l.fs, filepath.Join(l.dir, offsetGapsFile)); err != nil {
		return fmt.Errorf("check %s: %w", offsetGapsFile, err)
	}
	l.cleanedTo = l.readCheckpointOrZero(cleanerCheckpointFile)
	l.tombstoneHorizon = math.MaxInt64
	lines, found, err := readCheckpointLines(l.fs, filepath.Join(l.dir, cleanerSwapFile))
	if err != nil {
		return fmt.Errorf("read %s: %w", cleanerSwapFile, err)
	}
	if found {
		base, end, err := parseSwapRecord(lines)
		if err != nil {
			return fmt.Errorf("%s: %w", cleanerSwapFile, err)
		}
		l.logger.Info("finishing an interrupted compaction swap", "dir", l.dir, "base", base, "end", end)
		// The swapped-in segment may have gaps: the marker was written
		// before the swap record, but make sure.
		if err := l.allowGapsLocked(); err != nil {
			return err
		}
		if err := l.finishSwap(base, end); err != nil {
			return err
		}
		if err := removeDurably(l.fs, l.dir, filepath.Join(l.dir, cleanerSwapFile)); err != nil {
			return fmt.Errorf("remove %s: %w", cleanerSwapFile, err)
		}
	}
	return l.removeUndecidedCleaned()
}

func encodeSwapRecord(base, end int64) []byte {
	return fmt.Appendf(nil, "%d\n%d %d\n", checkpointVersion, base, end)
}

func parseSwapRecord(lines []string) (base, end int64, err error) {
	if len(lines) != 1 {
		return 0, 0, fmt.Errorf("want one line, have %d", len(lines))
	}
	fields := strings.Fields(lines[0])
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("bad line %q", lines[0])
	}
	base, err1 := strconv.ParseInt(fields[0], 10, 64)
	end, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil || base < 0 || end <= base {
		return 0, 0, fmt.Errorf("bad line %q", lines[0])
	}
	return base, end, nil
}

// finishSwap does step 3 of the swap (see above); it is idempotent.
func (l *Log) finishSwap(base, end int64) error {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if err := removeIfExists(l.fs, segmentFileName(l.dir, base, suffix)); err != nil {
			return err
		}
	}
	// The log file first: an index file is only ever trusted next to
	// the log it was built from.
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		cleaned := segmentFileName(l.dir, base, suffix+cleanedSuffix)
		if ok, err := vfs.Exists(l.fs, cleaned); err != nil {
			return fmt.Errorf("stat %s: %w", cleaned, err)
		} else if ok {
			if err := l.fs.Rename(cleaned, segmentFileName(l.dir, base, suffix)); err != nil {
				return fmt.Errorf("swap in %s: %w", cleaned, err)
			}
		}
	}
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		if b, ok := parseSegmentName(e.Name); ok && b > base && b < end {
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := removeIfExists(l.fs, segmentFileName(l.dir, b, suffix)); err != nil {
					return err
				}
			}
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", l.dir, err)
	}
	l.dirVersion++
	return nil
}

// removeUndecidedCleaned deletes .cleaned files no swap record names: a
// pass that crashed before deciding its swap.
func (l *Log) removeUndecidedCleaned() error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name, cleanedSuffix) {
			if err := removeIfExists(l.fs, filepath.Join(l.dir, e.Name)); err != nil {
				return err
			}
			l.dirVersion++
		}
	}
	return nil
}

func removeIfExists(fs vfs.FS, path string) error {
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// swapLocked replaces the segments old (consecutive in l.segments, the
// first at index at) by out, whose log file is the synced
// <base>.log.cleaned. Callers hold syncMu and mu exclusively. A failure
// after the swap was decided fails the log: Open finishes it.
func (l *Log) swapLocked(at int, old []*segment, out *segment, removedMarkers map[int64]bool) error {
	base := old[0].base
	end := l.segments[at+len(old)].base
	if err := l.allowGapsLocked(); err != nil {
		return err
	}
	record := filepath.Join(l.dir, cleanerSwapFile)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, record, encodeSwapRecord(base, end)); err != nil {
		// Not decided: the .cleaned file is removed by the caller or
		// at the next Open.
		return fmt.Errorf("record compaction swap of %s: %w", l.dir, err)
	}
	if err := l.finishSwap(base, end); err != nil {
		return l.failLocked(fmt.Errorf("compaction swap: %w", err))
	}
	for _, s := range old {
		l.forgetUnsynced(s)
		s.close()
	}
	if l.cacheMark.base >= base {
		// The merged file is new (and synced): from its start on, the
		// next DropCache advises out again what is outside the window.
		l.cacheMark = cacheMark{base, 0}
	}
	segs := append([]*segment{}, l.segments[:at]...)
	segs = append(segs, out)
	l.segments = append(segs, l.segments[at+len(old):]...)
	// The merged segment holds its sources' markers, so their
	// aborted-transaction entries, but for the markers the pass removed.
	// A crash before this write leaves the base's file behind; the
	// replica's check at the next open rewrites it.
	out.aborted = nil
	for _, s := range old {
		for _, a := range s.aborted {
			if !removedMarkers[a.LastOffset] {
				out.aborted = append(out.aborted, a)
			}
		}
	}
	if err := l.writeTxnIndex(out); err != nil {
		return l.failLocked(fmt.Errorf("compaction swap: %w", err))
	}
	if err := removeDurably(l.fs, l.dir, record); err != nil {
		return l.failLocked(fmt.Errorf("compaction swap: %w", err))
	}
	return nil
}

// lowerCleanedToLocked moves the cleaner checkpoint back to offset when the
// log was truncated below it, so the new data there counts as dirty.
func (l *Log) lowerCleanedToLocked(offset int64) {
	if l.cleanedTo <= offset {
		return
	}
	l.cleanedTo = offset
	if err := writeOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile, offset); err != nil {
		l.logger.Warn("cleaner checkpoint not lowered", "dir", l.dir, "err", err)
	}
}
