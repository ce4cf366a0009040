package storage

import (
	"fmt"
	"os"
	"path/filepath"
)

// removeSegments deletes segments already unlinked from l.segments and
// syncs the directory. Callers hold syncMu (no Sync is using their files)
// and, once the log is shared, mu.
func (l *Log) removeSegments(drop []*segment) error {
	if len(drop) == 0 {
		return nil
	}
	for _, s := range drop {
		l.forgetUnsynced(s)
		if err := s.remove(l.fs); err != nil {
			return l.failLocked(fmt.Errorf("delete segment %d: %w", s.base, err))
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.failLocked(fmt.Errorf("sync dir %s: %w", l.dir, err))
	}
	return nil
}

// forgetUnsynced removes s from the list of segments awaiting fsync.
func (l *Log) forgetUnsynced(s *segment) {
	for i, u := range l.unsynced {
		if u == s {
			l.unsynced = append(l.unsynced[:i:i], l.unsynced[i+1:]...)
			return
		}
	}
}

// setLogStartLocked moves the log start forward, persisting it first so a
// crash in the middle of the deletions that follow is finished at the next
// Open rather than exposing a reappeared segment.
func (l *Log) setLogStartLocked(offset int64) error {
	if offset <= l.logStart {
		return nil
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, logStartOffsetFile, offset); err != nil {
		return fmt.Errorf("advance log start of %s to %d: %w", l.dir, offset, err)
	}
	l.logStart = offset
	if err := l.epochs.TruncateFromStart(offset); err != nil {
		return l.failLocked(err)
	}
	return nil
}

// DeleteBefore advances the log start offset to offset (DeleteRecords) and
// deletes the segments wholly below it. The active segment is kept even if
// offset reaches the log end.
func (l *Log) DeleteBefore(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if offset > l.leo() {
		return fmt.Errorf("%w: delete %s before %d: log ends at %d", ErrOffsetOutOfRange, l.dir, offset, l.leo())
	}
	if offset <= l.logStart {
		return nil
	}
	if err := l.setLogStartLocked(offset); err != nil {
		return err
	}
	var drop []*segment
	for len(l.segments) > 1 && l.segments[0].next <= offset {
		drop = append(drop, l.segments[0])
		l.segments = l.segments[1:]
	}
	return l.removeSegments(drop)
}

// EnforceRetention deletes the oldest segments that are past retention.ms
// (by their largest timestamp) or that must go to bring the log under
// retention.bytes. The active segment is never deleted.
func (l *Log) EnforceRetention(nowMs int64) (deletedSegments int, err error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	excess := int64(-1)
	if l.cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range l.segments {
			total += s.size
		}
		excess = total - l.cfg.RetentionBytes
	}
	n := 0
	for n < len(l.segments)-1 {
		s := l.segments[n]
		expired := l.cfg.RetentionMs >= 0 && s.maxTimestamp >= 0 && nowMs-s.maxTimestamp > l.cfg.RetentionMs
		oversize := excess >= 0 && excess-s.size >= 0
		if !expired && !oversize {
			break
		}
		if oversize {
			excess -= s.size
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if err := l.setLogStartLocked(l.segments[n].base); err != nil {
		return 0, err
	}
	drop := l.segments[:n:n]
	l.segments = l.segments[n:]
	l.logger.Info("retention deleted segments", "dir", l.dir, "segments", n, "log_start", l.logStart)
	return n, l.removeSegments(drop)
}

// Truncate removes every batch at and after offset (a follower cutting a
// divergent tail). If offset falls inside a batch the whole batch goes, as
// in Kafka, so the log end may end up below offset. An offset at or beyond
// the log end cuts no batch but drops epoch entries starting at the log
// end (epochs without batches); one below the log start empties the log and
// restarts it at offset. The change is durable on return, and the leader
// epoch cache is truncated after the log, so a crash in between leaves a
// state the follower's next OffsetForLeaderEpoch round repairs.
func (l *Log) Truncate(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if offset >= l.leo() {
		// Nothing to cut from the log, but an epoch that starts at the log
		// end holds no batches: a replica that led it briefly without
		// appending. Keeping it would make the follower claim that epoch
		// as its last fetched one, which the leader never had, and it
		// would be told to reconcile again and again (Kafka's
		// UnifiedLog.truncateTo clears it the same way).
		if err := l.epochs.TruncateFromEnd(l.leo()); err != nil {
			return l.failLocked(err)
		}
		return nil
	}
	l.forgetSharedLocked()
	if offset < l.logStart {
		return l.resetTo(offset)
	}
	i := l.segmentFor(offset)
	keep := l.segments[i]
	pos, _, found, err := keep.findBatch(offset, l.gaps)
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	if !found {
		pos = keep.size
	}
	// The kept segment becomes the active one and may lose its sealed
	// index files' validity: recovery must re-validate it after a crash.
	if keep.base < l.recoveryPoint {
		if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, keep.base); err != nil {
			return fmt.Errorf("truncate %s: %w", l.dir, err)
		}
		l.recoveryPoint = keep.base
	}
	// Later segments go first (durably), so a crash cannot leave them
	// behind a shortened segment as a gap.
	drop := l.segments[i+1:]
	l.segments = l.segments[:i+1]
	if err := l.removeSegments(drop); err != nil {
		return err
	}
	if err := keep.truncateTo(pos); err != nil {
		return l.failLocked(fmt.Errorf("truncate %s: %w", l.dir, err))
	}
	l.forgetUnsynced(keep)
	if err := l.walkTail(keep, pos); err != nil {
		return l.failLocked(fmt.Errorf("truncate %s: re-read tail: %w", l.dir, err))
	}
	if err := l.truncateTxnIndex(keep, keep.next); err != nil {
		return l.failLocked(fmt.Errorf("truncate %s: %w", l.dir, err))
	}
	l.durableEnd = min(l.durableEnd, keep.next)
	// keep's file is synced (truncateTo) and the later segments are
	// gone, so once the last Sync covered the segments before keep, all
	// of keep counts as durable; what is written at the cut on is new to
	// the drop-behind. A later segment of the last Sync is gone: keep
	// becomes it. An earlier one leaves rolled segments between it and
	// keep unsynced still: then nothing changes.
	if l.synced.base >= keep.base {
		l.synced = cacheExtent{keep.base, keep.size}
	}
	l.cacheMark = l.cacheMark.truncatedTo(keep.base, keep.size)
	l.noteRewoundLocked(keep.next)
	l.lowerCleanedToLocked(keep.next)
	l.logger.Info("truncated log", "dir", l.dir, "requested", offset, "log_end", keep.next)
	if err := l.epochs.TruncateFromEnd(keep.next); err != nil {
		return l.failLocked(err)
	}
	return nil
}

// truncateTo cuts the segment file at pos (a batch boundary) durably and
// drops the index entries at or after it.
func (s *segment) truncateTo(pos int64) error {
	s.closePendingIndexFiles()
	if err := s.file.Truncate(pos); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", s.logPath(), pos, err)
	}
	s.zeroEnd = 0 // cut with the tail
	s.trims++
	if err := s.file.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.logPath(), err)
	}
	s.trimsSynced = s.trims
	s.index.truncate(pos)
	// Time entries naming offsets past the last remaining index entry
	// are dropped too; walkTail re-derives the tail's statistics.
	relEnd := uint32(0)
	if n := len(s.index.entries); n > 0 {
		relEnd = s.index.entries[n-1].rel + 1
	}
	s.timeIndex.truncate(relEnd)
	s.maxTimestamp, s.offsetOfMaxTime = -1, -1
	if last, ok := s.timeIndex.last(); ok {
		s.maxTimestamp, s.offsetOfMaxTime = last.ts, s.base+int64(last.rel)
	}
	s.rollStartMs = -1
	s.next = s.base
	s.size = pos
	return nil
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset (a follower whose log is entirely out of the leader's range).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("restart %s at negative offset %d", l.dir, offset)
	}
	return l.resetTo(offset)
}

// resetTo deletes all segments and starts one empty segment at offset. The
// log start checkpoint is written first: after a crash midway, Open sees
// segments below the log start and finishes the job.
func (l *Log) resetTo(offset int64) error {
	l.forgetSharedLocked()
	if err := writeOffsetCheckpoint(l.fs, l.dir, logStartOffsetFile, offset); err != nil {
		return fmt.Errorf("restart %s at %d: %w", l.dir, offset, err)
	}
	drop := l.segments
	l.segments = nil
	if err := l.removeSegments(drop); err != nil {
		return err
	}
	fresh, err := createSegment(l.fs, l.dir, offset)
	if err != nil {
		return l.failLocked(fmt.Errorf("restart %s at %d: %w", l.dir, offset, err))
	}
	l.segments = []*segment{fresh}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.failLocked(fmt.Errorf("sync dir %s: %w", l.dir, err))
	}
	l.logStart, l.durableEnd, l.recoveryPoint = offset, offset, offset
	// New files: nothing of them is synced or advised out yet.
	l.synced, l.cacheMark = cacheExtent{}, cacheMark{}
	l.noteRewoundLocked(offset)
	l.lowerCleanedToLocked(offset)
	l.logger.Info("log restarted", "dir", l.dir, "offset", offset)
	if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, offset); err != nil {
		l.logger.Warn("recovery point not saved", "dir", l.dir, "err", err)
	}
	if err := l.epochs.Clear(); err != nil {
		return l.failLocked(err)
	}
	return nil
}

// Close syncs the log, writes the active segment's indexes, leaves the
// clean-shutdown marker (only if everything succeeded) and closes all files.
func (l *Log) Close() error { return l.close(true) }

// CloseLeavingDirSync is Close except that the marker's directory entry is
// not synced: the caller closing many logs makes all their markers durable
// at once with one vfs.FS.SyncFS afterwards, rather than one directory
// fsync per log. Everything else is durable before the marker is created,
// so a marker that reaches the disk before that SyncFS (or without it, in
// a crash) still vouches only for durable data; one that does not costs
// the next open a recovery scan, nothing more.
func (l *Log) CloseLeavingDirSync() error { return l.close(false) }

func (l *Log) close(syncDir bool) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.unlock()
		return nil
	}
	l.closed = true // no appends from here on
	l.forgetSharedLocked()
	active := l.active()
	var err error
	if l.failed == nil {
		// Cut the zero-filled window first: the marker vouches for a
		// file that ends at its last batch (closeCleanly's sync makes the
		// cut durable before the marker is written).
		if err = active.trimZeroTail(); err != nil {
			l.failLocked(err)
		}
	}
	if l.failed == nil {
		active.sealTimeIndex()
		if err = active.closeIndexFiles(l.fs); err != nil {
			l.failLocked(err)
		}
	}
	l.unlock()

	if err == nil {
		err = l.closeCleanly(active, syncDir)
	}
	l.mu.Lock()
	defer l.unlock()
	for _, s := range l.segments {
		if cerr := s.close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err == nil && l.failed != nil {
		err = l.failed
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", l.dir, err)
	}
	return nil
}

// closeCleanly makes everything durable and then writes the marker.
func (l *Log) closeCleanly(active *segment, syncDir bool) error {
	if _, err := l.syncLocked(); err != nil {
		return err
	}
	for _, f := range active.pendingIndexFiles {
		if err := f.Sync(); err != nil {
			return l.fail(fmt.Errorf("fsync %s: %w", f.Name(), err))
		}
	}
	l.mu.RLock()
	damaged := l.damagedFrom >= 0
	l.mu.RUnlock()
	if damaged {
		return nil // no marker: the next open re-validates from the damage
	}
	// The marker has no contents, only its existence: created in place
	// (no temporary file and rename), it is durable once the directory
	// is synced, which also makes the index files just written durable
	// entries. One fsync fewer per log, which a broker closing thousands
	// of idle logs at once waits for.
	marker := filepath.Join(l.dir, cleanShutdownFile)
	f, err := l.fs.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return fmt.Errorf("write clean shutdown marker: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write clean shutdown marker: %w", err)
	}
	if !syncDir {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("write clean shutdown marker: sync dir %s: %w", l.dir, err)
	}
	return nil
}
