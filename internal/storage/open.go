package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/vfs"
)

// Open opens (creating if needed) the log in dir and recovers it; see the
// package comment for what recovery checks. On return everything in the
// log is durable, and the clean-shutdown marker is durably removed, so a
// crash from here on is detected as unclean.
func Open(fs vfs.FS, dir string, cfg Config, opts Options) (*Log, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{fs: fs, dir: filepath.Clean(dir), logger: logger, cfg: cfg.normalized(), mayFillAhead: opts.MayFillAhead, cacheWindow: opts.PageCacheWindow, damagedFrom: -1, rewoundTo: math.MaxInt64}
	if err := vfs.MkdirAllDurably(fs, l.dir); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	if err := l.load(opts.Fresh); err != nil {
		for _, s := range l.segments {
			s.close()
		}
		return nil, fmt.Errorf("open log %s: %w", l.dir, err)
	}
	l.publishLocked()
	return l, nil
}

// load does Open's work; fresh is Options.Fresh.
func (l *Log) load(fresh bool) error {
	markerPath := filepath.Join(l.dir, cleanShutdownFile)
	clean, err := vfs.Exists(l.fs, markerPath)
	if err != nil {
		return fmt.Errorf("check clean shutdown marker: %w", err)
	}
	if l.epochs, err = l.loadEpochCache(); err != nil {
		return err
	}
	l.epochs.publishTo(&l.latestEpoch) // before anyone else sees l
	if err := l.loadCleanerState(); err != nil {
		return err
	}
	l.recoveryPoint = l.readCheckpointOrZero(recoveryPointFile)
	logStartCheckpoint := l.readCheckpointOrZero(logStartOffsetFile)
	if l.forceFullRecovery {
		clean, l.recoveryPoint = false, 0
	}

	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if err := l.loadSegments(bases, clean, logStartCheckpoint); err != nil {
		return err
	}
	// A fresh log is one the caller just created and will make durable
	// with one SyncFS: nothing on disk yet to recover or keep.
	fresh = fresh && len(bases) == 0 && !clean
	if len(l.segments) == 0 {
		s, err := createSegment(l.fs, l.dir, logStartCheckpoint)
		if err != nil {
			return err
		}
		l.segments = []*segment{s}
		l.dirVersion++
	}
	if err := l.applyLogStart(logStartCheckpoint); err != nil {
		return err
	}
	for _, s := range l.segments {
		if err := l.loadTxnIndex(s); err != nil {
			return err
		}
	}
	if err := l.epochs.TruncateFromEnd(l.leo()); err != nil {
		return err
	}
	if err := l.epochs.TruncateFromStart(l.logStart); err != nil {
		return err
	}

	if fresh {
		// The caller's SyncFS makes the segment and its directory entry
		// durable before the log is used (Options.Fresh), so no later
		// Sync needs to sync the directory for them.
		l.dirSynced = l.dirVersion
		l.durableEnd = l.leo()
		return nil
	}
	// Make everything recovery kept durable (a process crash leaves data
	// in the page cache that never reached the disk), including rebuilt
	// indexes, before the marker goes.
	l.syncMu.Lock()
	_, err = l.syncLocked()
	l.syncMu.Unlock()
	if err != nil {
		return err
	}
	l.durableEnd = l.leo()
	if clean {
		if err := removeDurably(l.fs, l.dir, markerPath); err != nil {
			return fmt.Errorf("remove clean shutdown marker: %w", err)
		}
	}
	return nil
}

// readCheckpointOrZero reads an offset checkpoint; an unreadable one is
// logged and treated as 0, which for both users (recovery point, log start)
// is the safe direction: recover more, keep more.
func (l *Log) readCheckpointOrZero(name string) int64 {
	offset, _, err := readOffsetCheckpoint(l.fs, l.dir, name)
	if err != nil {
		l.logger.Warn("checkpoint unreadable; using 0", "dir", l.dir, "file", name, "err", err)
		return 0
	}
	return offset
}

// listSegments returns the base offsets of the .log files, sorted, and
// removes leftovers: temporary checkpoint files and index files whose log
// file is gone (from an interrupted segment deletion).
func (l *Log) listSegments() ([]int64, error) {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.dir, err)
	}
	logs := map[string]bool{}
	var bases []int64
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name); ok && !e.IsDir {
			bases = append(bases, base)
			logs[strings.TrimSuffix(e.Name, logSuffix)] = true
		}
	}
	for _, e := range entries {
		stem, isIndex := strings.CutSuffix(e.Name, indexSuffix)
		if !isIndex {
			stem, isIndex = strings.CutSuffix(e.Name, timeIndexSuffix)
		}
		if !isIndex {
			stem, isIndex = strings.CutSuffix(e.Name, txnIndexSuffix)
		}
		orphanIndex := isIndex && len(stem) == baseOffsetDigits && !logs[stem]
		if orphanIndex || strings.HasSuffix(e.Name, tmpSuffix) {
			if err := l.fs.Remove(filepath.Join(l.dir, e.Name)); err != nil {
				return nil, fmt.Errorf("remove leftover %s: %w", e.Name, err)
			}
			l.dirVersion++
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// loadSegments opens every segment in order. Segments at or after the
// recovery point, and the last one, are re-validated after an unclean stop;
// others get their indexes loaded and sanity-checked (rebuilt if they fail).
// The first segment found damaged is cut at the damage, and every later
// segment is deleted: offsets must stay contiguous.
//
// A gap wholly below the checkpointed log start is not damage: it is a
// segment deletion that was cut short by a crash, finished by applyLogStart.
func (l *Log) loadSegments(bases []int64, clean bool, logStartCheckpoint int64) error {
	for i, base := range bases {
		last := i == len(bases)-1
		nextBase := int64(-1)
		if !last {
			nextBase = bases[i+1]
		}
		s, fileSize, err := openSegmentFile(l.fs, l.dir, base)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
		validate := !clean && (base >= l.recoveryPoint || last)
		damaged := false
		if validate {
			damaged, err = l.recoverSegment(s, fileSize)
		} else {
			damaged, err = l.loadTrustedSegment(s, fileSize, nextBase)
		}
		if err != nil {
			return err
		}
		if !damaged && !last && validate {
			// Re-validated segments that stay sealed need their rebuilt
			// index files on disk.
			if err := l.sealRebuilt(s); err != nil {
				return err
			}
		}
		if !damaged && !last && !segmentsAbut(s.next, nextBase, l.gaps) && nextBase > logStartCheckpoint {
			l.logger.Warn("segment does not end where the next begins; dropping later segments",
				"dir", l.dir, "segment", base, "end", s.next, "next", nextBase)
			damaged = true
		}
		if damaged && !last {
			return l.dropSegmentsAfter(bases[i+1:])
		}
	}
	return nil
}

// dropSegmentsAfter deletes segment files that follow a damaged segment.
func (l *Log) dropSegmentsAfter(bases []int64) error {
	for _, base := range bases {
		l.logger.Warn("deleting segment after damaged one", "dir", l.dir, "segment", base)
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if err := l.fs.Remove(segmentFileName(l.dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("delete segment %d: %w", base, err)
			}
		}
	}
	l.dirVersion++
	return nil
}

// recoverSegment re-validates every batch of s (size, magic, CRC-32C,
// offsets contiguous from the segment base), rebuilds its indexes and cuts
// the file at the first bad or partial batch. It also re-derives leader
// epochs the checkpoint may have missed. damaged reports a cut.
func (l *Log) recoverSegment(s *segment, fileSize int64) (damaged bool, err error) {
	s.resetIndexes()
	sc := newScanner(s.file, 0, fileSize, true)
	var stop error
	batches := 0
	for {
		h, pos, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, errTornTail) {
				return false, fmt.Errorf("recover %s: %w", s.logPath(), err) // an I/O error: never cut data over it
			}
			stop = err
			break
		}
		if !follows(s.next, h.BaseOffset, l.gaps) {
			stop = fmt.Errorf("%w: batch at position %d starts at offset %d, expected %d", ErrCorrupt, pos, h.BaseOffset, s.next)
			break
		}
		if !s.fitsOffset(h.LastOffset()) {
			stop = fmt.Errorf("%w: batch at position %d ends at offset %d, too far from base %d", ErrCorrupt, pos, h.LastOffset(), s.base)
			break
		}
		if err := l.assignEpochLocked(h.LeaderEpoch, h.BaseOffset); err != nil && !errors.Is(err, ErrStaleEpoch) {
			return false, err
		}
		s.track(&h, pos, l.cfg.IndexIntervalBytes, h.MaxTimestamp)
		batches++
	}
	// A segment found on disk starts its segment.ms clock at its first
	// batch's timestamp (set by track above), as Kafka does.
	if stop == nil {
		return false, nil
	}
	dropped := fileSize - s.size
	// Zeros from the last whole batch to the end are the write-ahead
	// window a crash left (zerotail.go): cut like a torn tail, but no
	// damage, so later segments stay (their contiguity is checked next).
	zeros, err := zeroTail(s, s.size, fileSize)
	if err != nil {
		return false, fmt.Errorf("recover %s: %w", s.logPath(), err)
	}
	if zeros {
		l.logger.Info("cutting the zero-filled window after the last batch", "dir", l.dir, "segment", s.base,
			"kept_batches", batches, "kept_bytes", s.size, "dropped_bytes", dropped, "next_offset", s.next)
	} else {
		l.logger.Warn("truncating damaged log tail", "dir", l.dir, "segment", s.base,
			"kept_batches", batches, "kept_bytes", s.size, "dropped_bytes", dropped, "next_offset", s.next, "reason", stop)
	}
	if err := s.file.Truncate(s.size); err != nil {
		return true, fmt.Errorf("truncate %s to %d: %w", s.logPath(), s.size, err)
	}
	// Make the cut durable now: otherwise a crash could bring the bad tail
	// back under data appended after it.
	if err := s.file.Sync(); err != nil {
		return true, fmt.Errorf("sync %s after truncation: %w", s.logPath(), err)
	}
	return !zeros, nil
}

// loadTrustedSegment loads a segment that was synced before the crash (or
// cleanly closed): its index files are checked and used, and rebuilt from
// the log (headers only) when missing or inconsistent. For the last
// segment of a cleanly closed log, the batches after the last index entry
// are walked to find the log end. nextBase is -1 for the last segment.
func (l *Log) loadTrustedSegment(s *segment, fileSize, nextBase int64) (damaged bool, err error) {
	maxRel := int64(1<<31 - 1)
	if nextBase >= 0 {
		maxRel = nextBase - s.base - 1
	}
	if err := l.loadIndexFiles(s, fileSize, maxRel); err != nil {
		l.logger.Info("rebuilding segment indexes", "dir", l.dir, "segment", s.base, "reason", err)
		return l.rebuildFromHeaders(s, fileSize)
	}
	if err := l.walkTail(s, fileSize); err != nil {
		l.logger.Warn("segment tail inconsistent with its index; re-validating it", "dir", l.dir, "segment", s.base, "reason", err)
		return l.recoverSegment(s, fileSize)
	}
	return false, nil
}

// loadIndexFiles reads and checks both index files of s.
// An empty segment's indexes are empty: a close leaves no index files for
// one (segment.closeIndexFiles), and their absence is no reason to rebuild.
func (l *Log) loadIndexFiles(s *segment, fileSize, maxRel int64) error {
	data, err := l.readIndexFile(s.indexPath(), fileSize)
	if err != nil {
		return err
	}
	if s.index, err = decodeOffsetIndex(data, fileSize, maxRel); err != nil {
		return fmt.Errorf("%s: %w", s.indexPath(), err)
	}
	timeData, err := l.readIndexFile(s.timeIndexPath(), fileSize)
	if err != nil {
		return err
	}
	if s.timeIndex, err = decodeTimeIndex(timeData, maxRel); err != nil {
		return fmt.Errorf("%s: %w", s.timeIndexPath(), err)
	}
	s.noIndexEntriesOnDisk = len(data) == 0 && len(timeData) == 0
	if last, ok := s.timeIndex.last(); ok {
		s.maxTimestamp, s.offsetOfMaxTime = last.ts, s.base+int64(last.rel)
	} else if fileSize > 0 {
		// A sealed non-empty segment always has a final time entry
		// unless no batch has a timestamp; rather than guess, rebuild.
		return fmt.Errorf("%s: empty time index for a non-empty segment", s.timeIndexPath())
	}
	return nil
}

// readIndexFile reads an index file; a missing one of an empty segment
// reads as empty.
func (l *Log) readIndexFile(path string, fileSize int64) ([]byte, error) {
	data, err := vfs.ReadFile(l.fs, path)
	if err != nil && !(fileSize == 0 && errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// walkTail walks the batch headers after the last offset index entry to the
// end of the file: it checks that the index points at a real batch boundary,
// that offsets are contiguous and that the file ends on a batch boundary, and
// it finds the segment's next offset and the tail's statistics.
func (l *Log) walkTail(s *segment, fileSize int64) error {
	s.size = fileSize // readHeader bounds reads by s.size
	pos, expectLast := int64(0), int64(-1)
	if n := len(s.index.entries); n > 0 {
		pos, expectLast = int64(s.index.entries[n-1].pos), s.base+int64(s.index.entries[n-1].rel)
	}
	sc := newScanner(s.file, pos, fileSize, false)
	s.bytesSinceIndex = 0
	first := true
	for {
		h, at, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case first && expectLast >= 0 && h.LastOffset() != expectLast:
			return fmt.Errorf("index says offset %d at position %d, batch there ends at %d", expectLast, at, h.LastOffset())
		case first && expectLast < 0 && !follows(s.base, h.BaseOffset, l.gaps):
			return fmt.Errorf("first batch starts at %d, segment base is %d", h.BaseOffset, s.base)
		case !first && !follows(s.next, h.BaseOffset, l.gaps):
			return fmt.Errorf("batch at position %d starts at %d, expected %d", at, h.BaseOffset, s.next)
		}
		if !s.fitsOffset(h.LastOffset()) {
			return fmt.Errorf("batch at position %d ends at offset %d, too far from base %d", at, h.LastOffset(), s.base)
		}
		if first && expectLast >= 0 {
			// This batch is the indexed one: account for it without
			// indexing it again.
			s.bytesSinceIndex = int64(h.Size())
			s.next = h.LastOffset() + 1
			if h.MaxTimestamp > s.maxTimestamp {
				s.maxTimestamp, s.offsetOfMaxTime = h.MaxTimestamp, h.LastOffset()
			}
		} else {
			s.track(&h, at, l.cfg.IndexIntervalBytes, -1)
		}
		if s.rollStartMs < 0 && at == 0 {
			s.rollStartMs = h.MaxTimestamp
		}
		first = false
	}
	s.size = fileSize
	if s.rollStartMs < 0 && fileSize > 0 {
		// The first batch was not walked; read its header for the
		// segment.ms clock.
		h, err := s.readHeader(0)
		if err != nil {
			return err
		}
		s.rollStartMs = h.MaxTimestamp
	}
	return nil
}

// rebuildFromHeaders rebuilds the indexes of a trusted segment by walking
// batch headers (no CRC check: the data was synced; reads check CRCs). A
// structural problem found on the way falls back to full recovery.
func (l *Log) rebuildFromHeaders(s *segment, fileSize int64) (damaged bool, err error) {
	s.resetIndexes()
	sc := newScanner(s.file, 0, fileSize, false)
	for {
		h, pos, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || !follows(s.next, h.BaseOffset, l.gaps) || !s.fitsOffset(h.LastOffset()) {
			l.logger.Warn("segment structure damaged; re-validating it", "dir", l.dir, "segment", s.base, "position", pos, "err", err)
			return l.recoverSegment(s, fileSize)
		}
		s.track(&h, pos, l.cfg.IndexIntervalBytes, h.MaxTimestamp)
	}
	// Sync (at the end of Open) makes the rebuilt index files durable.
	if err := l.sealRebuilt(s); err != nil {
		return false, err
	}
	return false, nil
}

// sealRebuilt writes the rebuilt index files of a segment and queues them
// for the next Sync.
func (l *Log) sealRebuilt(s *segment) error {
	s.sealTimeIndex()
	if err := s.writeIndexFiles(l.fs); err != nil {
		return err
	}
	l.unsynced = append(l.unsynced, s)
	l.dirVersion++ // the index files may be new directory entries
	return nil
}

// applyLogStart sets the log start offset from its checkpoint and the first
// segment, and finishes interrupted deletions: segments wholly below the log
// start are deleted (the active one is kept). A log start beyond the log end
// (data lost in a crash after a DeleteRecords) restarts the log there.
func (l *Log) applyLogStart(checkpoint int64) error {
	l.logStart = max(checkpoint, l.segments[0].base)
	if l.logStart > l.leo() {
		l.logger.Warn("log start offset beyond the log end; restarting the log there", "dir", l.dir, "log_start", l.logStart, "log_end", l.leo())
		return l.resetTo(l.logStart)
	}
	var drop []*segment
	for len(l.segments) > 1 && l.segments[0].next <= l.logStart {
		drop = append(drop, l.segments[0])
		l.segments = l.segments[1:]
	}
	return l.removeSegments(drop)
}
