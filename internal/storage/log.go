package storage

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/vfs"
)

// Log is the on-disk log of one partition.
//
// Locking: mu guards all state. Append holds it exclusively for the write
// (a page-cache copy); Read holds it shared for the pread. syncMu serializes
// Sync with the operations that remove or shrink files (Truncate,
// DeleteBefore, EnforceRetention, Close), so Sync can fsync without holding
// mu while appends continue. Lock order: syncMu before mu.
type Log struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger
	epochs *EpochCache

	syncMu sync.Mutex
	mu     sync.RWMutex
	// start and end are logStart and the log end offset as of the last
	// release of mu (unlock), for readers that take no lock.
	start, end atomic.Int64
	// latestEpoch is where the epoch cache publishes its latest epoch
	// (EpochCache.publishTo), beside the bounds: a follower's fetch round
	// reads all three of every partition.
	latestEpoch atomic.Int32

	cfg      Config
	segments []*segment // ascending base offsets; the last is active; never empty while open
	logStart int64

	durableEnd    int64      // everything below is fsynced
	recoveryPoint int64      // value in the recovery-point file
	unsynced      []*segment // rolled segments whose files are not fsynced yet
	dirVersion    uint64     // bumped when a segment file is created
	dirSynced     uint64     // dirVersion as of the last SyncDir

	// appendedBytes counts the bytes appended since Open; syncedAppended
	// is its value as of the last Sync. Their difference, what a Sync
	// covered, decides whether the zero-filled window is refilled
	// (zerotail.go).
	appendedBytes, syncedAppended int64
	mayFillAhead                  func(n int64) bool // Options.MayFillAhead

	// Drop-behind (dropbehind.go); all but cacheWindow guarded by syncMu.
	// cacheWindow is Options.PageCacheWindow (it stays over a move).
	// synced is the active segment's extent as of the last Sync: a
	// segment before it is durable whole, a later one not at all.
	// cacheMark is how far the log was advised out. The slices are
	// DropCache's scratch, kept to spare an allocation per call.
	cacheWindow  int64
	synced       cacheExtent
	cacheMark    cacheMark
	cacheExtents []cacheExtent
	cacheFiles   []vfs.File
	cacheDrops   []cacheDrop
	// cachedBytes is how many durable bytes the last DropCache or
	// DropCacheTo left not advised out (CachedBytes).
	cachedBytes atomic.Int64

	failed error // set by an I/O error that may have lost data; sticky
	// damagedFrom is the base of the first segment a read found corrupt,
	// or -1: the recovery point stays at or below it, and no clean
	// shutdown is recorded (see noteDamage).
	damagedFrom int64
	closed      bool

	// gaps is set once offsets may skip (compaction, or batches copied
	// from a compacted leader); see follows. Persisted by offsetGapsFile.
	gaps bool
	// cleanedTo is the cleaner checkpoint: the log below it was compacted
	// (the "clean" section), from it on it is "dirty".
	cleanedTo int64
	// tombstoneHorizon is the earliest delete horizon of a tombstone the
	// last pass kept (math.MaxInt64: none, or not known since Open), so an
	// idle log is cleaned again when a tombstone's time is up. After a
	// restart it is learnt at the next pass the dirty ratio triggers:
	// rewriting every compacted log once per restart to find out would
	// cost more than late tombstones (Kafka too drops them only when a
	// pass runs).
	tombstoneHorizon int64
	// cleanMu serialises compaction passes (Clean) of this log.
	cleanMu sync.Mutex

	// rewoundTo is the lowest log end a truncation or restart left since
	// the last TakeRewound (math.MaxInt64: none): a move's copier must
	// drop what it copied from there on (move.go).
	rewoundTo int64

	// shared is the last read into a pooled buffer, which a read of the
	// same bytes shares while an answer still holds it (sharedRead).
	shared atomic.Pointer[sharedRead]

	// forceFullRecovery is set while opening when a checkpoint that
	// recovery relies on is unreadable.
	forceFullRecovery bool
}

// AppendResult describes one appended batch.
type AppendResult struct {
	BaseOffset   int64
	LastOffset   int64
	MaxTimestamp int64 // the batch's max timestamp
	SegmentBase  int64 // base offset of the segment it went to
	Position     int64 // file position in that segment
	Size         int   // bytes
}

// Dir returns the partition directory. It changes when the log is moved to
// another log directory (AdoptFuture), hence the lock.
func (l *Log) Dir() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dir
}

// Epochs returns the leader-epoch cache.
func (l *Log) Epochs() *EpochCache { return l.epochs }

// SetConfig applies changed topic settings; they take effect on the next
// append, roll check or retention pass.
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	defer l.unlock()
	l.cfg = cfg.normalized()
}

// Config returns the settings in effect (after clamping).
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// LogStartOffset is the first offset readers may ask for. It reads no
// lock: the bounds are published at every release of the write lock.
func (l *Log) LogStartOffset() int64 {
	if invariant.Panics {
		l.checkPublished()
	}
	return l.start.Load()
}

// LogEndOffset is the next offset to be assigned. It reads no lock (see
// LogStartOffset): an idle broker asks it of every partition several
// times per follower fetch, so thousands of times a second with many
// partitions.
func (l *Log) LogEndOffset() int64 {
	if invariant.Panics {
		l.checkPublished()
	}
	return l.end.Load()
}

// LatestEpoch is Epochs().Latest(), which the cache publishes beside the log's bounds
// (one cache line with LogEndOffset and LogStartOffset): an idle
// follower asks it of every partition it follows every fetch round.
func (l *Log) LatestEpoch() (epoch int32, ok bool) {
	epoch = l.latestEpoch.Load()
	return epoch, epoch != UndefinedEpoch
}

// unlock publishes the log's bounds for the lock-free readers and
// releases the write lock. Every writer releases mu this way, so a reader
// sees the bounds of the last completed change.
func (l *Log) unlock() {
	l.publishLocked()
	l.mu.Unlock()
}

// publishLocked stores the bounds for LogStartOffset and LogEndOffset.
// Callers hold mu (or own the log, while opening it). A log without
// segments (a restart that failed midway, which fails the log) keeps the
// last bounds it published.
func (l *Log) publishLocked() {
	if len(l.segments) > 0 {
		l.end.Store(l.leo())
	}
	l.start.Store(l.logStart)
}

// checkPublished is the invariant behind the lock-free bounds: with the
// write lock released, what was published is what the log holds.
func (l *Log) checkPublished() {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segments) > 0 && l.end.Load() != l.leo() || l.start.Load() != l.logStart {
		invariant.Broken("%s: published bounds [%d, %d) but the log holds [%d, %d)", l.dir, l.start.Load(), l.end.Load(), l.logStart, l.leo())
	}
}

// DurableEndOffset is the offset below which everything is fsynced.
func (l *Log) DurableEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.durableEnd
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// Failed returns the error that failed the log, or nil.
func (l *Log) Failed() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }
func (l *Log) leo() int64       { return l.active().next }

// usableLocked reports why the log cannot take writes. Callers hold mu.
func (l *Log) usableLocked() error {
	if l.closed {
		return fmt.Errorf("%s: %w", l.dir, ErrClosed)
	}
	if l.failed != nil {
		return l.failed
	}
	return nil
}

// failLocked marks the log failed. Callers hold mu exclusively.
func (l *Log) failLocked(err error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %s: %w", ErrLogFailed, l.dir, err)
		l.logger.Error("partition log failed; appends disabled until reopened", "dir", l.dir, "err", err)
	}
	return l.failed
}

func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.unlock()
	return l.failLocked(err)
}

// Append is the leader's append of one batch: it validates the batch,
// assigns offsets from the log end, stamps leaderEpoch into the header (both
// fields are outside the CRC; b is modified in place) and writes it. It is
// not durable until Sync. A leaderEpoch newer than the cache's latest starts
// that epoch at this batch; an older one is refused (a stale leader).
func (l *Log) Append(b []byte, leaderEpoch int32, nowMs int64) (AppendResult, error) {
	h, err := batch.Validate(b)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: append to %s: %w", ErrInvalidBatch, l.dir, err)
	}
	return l.appendLeader(b, h, leaderEpoch, nowMs)
}

// AppendValidated is Append for a batch whose CRC-32C the caller has
// already verified since it last changed (the produce handler's
// records.Validate, and batch.SetLogAppendTime/SetMaxTimestamp, which
// recompute it): the framing is still checked, but the CRC is not computed
// a second time. The bytes are stored with that CRC, which consumers and
// followers verify.
func (l *Log) AppendValidated(b []byte, leaderEpoch int32, nowMs int64) (AppendResult, error) {
	h, err := batch.ValidateFraming(b)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: append to %s: %w", ErrInvalidBatch, l.dir, err)
	}
	return l.appendLeader(b, h, leaderEpoch, nowMs)
}

// appendLeader is the common part of Append and AppendValidated.
func (l *Log) appendLeader(b []byte, h batch.Header, leaderEpoch int32, nowMs int64) (AppendResult, error) {
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return AppendResult{}, err
	}
	base := l.leo()
	h.BaseOffset, h.LeaderEpoch = base, leaderEpoch
	if err := l.assignEpochLocked(leaderEpoch, base); err != nil {
		return AppendResult{}, err
	}
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, leaderEpoch)
	return l.appendLocked(b, &h, nowMs)
}

// AppendReplica is the follower's append of one batch copied from the
// leader: offsets and leader epoch are kept, and the batch must start at or
// (when the leader's log is compacted) after the log end offset.
func (l *Log) AppendReplica(b []byte, nowMs int64) (AppendResult, error) {
	h, err := batch.ValidateStored(b)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: replica append to %s: %w", ErrInvalidBatch, l.dir, err)
	}
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return AppendResult{}, err
	}
	if leo := l.leo(); h.BaseOffset != leo {
		// A leader whose log was compacted serves gaps; anything else
		// that does not continue the log is a mismatch.
		if h.BaseOffset < leo {
			return AppendResult{}, fmt.Errorf("%w: %s: batch starts at %d, log ends at %d", ErrOffsetMismatch, l.dir, h.BaseOffset, leo)
		}
		if err := l.allowGapsLocked(); err != nil {
			return AppendResult{}, err
		}
	}
	if err := l.assignEpochLocked(h.LeaderEpoch, h.BaseOffset); err != nil {
		return AppendResult{}, err
	}
	return l.appendLocked(b, &h, nowMs)
}

// assignEpochLocked starts a new leader epoch at offset when epoch is newer
// than the latest known one. Batches with no epoch (-1) leave the cache
// alone.
func (l *Log) assignEpochLocked(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil
	}
	latest, ok := l.epochs.Latest()
	if ok && epoch < latest {
		return fmt.Errorf("%w: %s: batch leader epoch %d is older than the latest epoch %d", ErrStaleEpoch, l.dir, epoch, latest)
	}
	if ok && epoch == latest {
		return nil
	}
	if err := l.epochs.Assign(epoch, offset); err != nil {
		// The checkpoint may be behind the log from here on; stop writing.
		return l.failLocked(err)
	}
	return nil
}

// appendLocked rolls if needed and writes one checked batch whose header
// already carries its final offsets. Callers hold mu exclusively.
func (l *Log) appendLocked(b []byte, h *batch.Header, nowMs int64) (AppendResult, error) {
	if int64(len(b)) > l.cfg.SegmentBytes {
		return AppendResult{}, fmt.Errorf("%w: %s: %d bytes, segment.bytes is %d", ErrBatchTooLarge, l.dir, len(b), l.cfg.SegmentBytes)
	}
	if err := l.maybeRollLocked(int64(len(b)), h.LastOffset(), nowMs); err != nil {
		return AppendResult{}, err
	}
	s := l.active()
	pos := s.size
	if _, err := s.file.WriteAt(b, pos); err != nil {
		// Undo any partial write so the file never holds a torn batch
		// that a later append would be written after. Readers could not
		// see it anyway: they stop at s.size.
		if terr := s.file.Truncate(pos); terr != nil {
			l.failLocked(fmt.Errorf("undo failed write at %d of %s: %w", pos, s.logPath(), terr))
		}
		if s.zeroEnd > pos {
			s.zeroEnd = 0 // the undo cut the window off too
		}
		s.trims++
		return AppendResult{}, fmt.Errorf("append to %s at %d: %w", s.logPath(), pos, err)
	}
	s.track(h, pos, l.cfg.IndexIntervalBytes, nowMs)
	if s.size >= s.zeroEnd {
		s.zeroEnd = 0 // the append used up the window (or there was none)
	}
	l.appendedBytes += int64(len(b))
	return AppendResult{
		BaseOffset:   h.BaseOffset,
		LastOffset:   h.LastOffset(),
		MaxTimestamp: h.MaxTimestamp,
		SegmentBase:  s.base,
		Position:     pos,
		Size:         len(b),
	}, nil
}

// MaybeRoll rolls the active segment if segment.ms has passed since its
// first append. Append checks this too; a timer calls MaybeRoll so that
// idle partitions roll (and become deletable) as well.
func (l *Log) MaybeRoll(nowMs int64) error {
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	if s := l.active(); s.size > 0 && l.segmentExpired(s, nowMs) {
		return l.rollLocked()
	}
	return nil
}

func (l *Log) segmentExpired(s *segment, nowMs int64) bool {
	return l.cfg.SegmentMs > 0 && s.rollStartMs >= 0 && nowMs-s.rollStartMs > l.cfg.SegmentMs
}

// maybeRollLocked starts a new segment when the batch would not fit in the
// active one: size, a full index, a relative offset that would overflow
// 32 bits, or segment.ms. An empty segment is never rolled.
func (l *Log) maybeRollLocked(size, lastOffset, nowMs int64) error {
	s := l.active()
	if s.size == 0 {
		return nil
	}
	if s.size+size > l.cfg.SegmentBytes ||
		s.index.isFull(l.cfg.MaxIndexBytes) ||
		s.timeIndex.isFull(l.cfg.MaxIndexBytes) ||
		!s.fitsOffset(lastOffset) ||
		l.segmentExpired(s, nowMs) {
		return l.rollLocked()
	}
	return nil
}

// rollLocked seals the active segment (writes its indexes, to be fsynced by
// the next Sync) and starts a new one at the log end offset.
func (l *Log) rollLocked() error {
	old := l.active()
	// A sealed segment ends at its last batch, like every file at rest.
	if err := old.trimZeroTail(); err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	old.sealTimeIndex()
	if err := old.writeIndexFiles(l.fs); err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	fresh, err := createSegment(l.fs, l.dir, old.next)
	if err != nil {
		return fmt.Errorf("roll %s: %w", l.dir, err)
	}
	l.segments = append(l.segments, fresh)
	l.unsynced = append(l.unsynced, old)
	l.dirVersion++
	l.logger.Debug("rolled segment", "dir", l.dir, "sealed", old.base, "bytes", old.size, "new", fresh.base)
	return nil
}

// Sync fsyncs everything appended so far: rolled segments and their
// indexes, the active segment, and the directory entries of new segment
// files. It returns the new durable end offset. It may run concurrently
// with Append: the end offset is captured first, and only that is promised.
// After an fsync error the log is failed (see the package comment).
func (l *Log) Sync() (durableEnd int64, err error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.RLock()
	err = l.usableLocked()
	l.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	return l.syncLocked()
}

// syncLocked does Sync's work; callers hold syncMu (not mu). It records
// the active segment's extent it made durable (l.synced) for DropCache.
func (l *Log) syncLocked() (int64, error) {
	l.mu.RLock()
	if l.failed != nil {
		l.mu.RUnlock()
		return l.durableEnd, l.failed
	}
	end := l.leo()
	appended := l.appendedBytes
	rolled := len(l.unsynced)
	var files []vfs.File
	for _, s := range l.unsynced {
		files = append(files, s.syncFiles()...)
	}
	active := l.active()
	activeExtent := cacheExtent{active.base, active.size}
	activeTrims := active.trims
	// The active segment's appends need fdatasync only: nothing reads a
	// segment's modification time, and with the zero-filled window
	// (zerotail.go) an fsync would still commit the journal for it. A cut
	// of its length takes a full fsync (as do the rolled segments, all
	// cut at the roll, and the index files), so no filesystem's reading
	// of what fdatasync must cover decides whether a cut is durable.
	datasyncActive := activeTrims == active.trimsSynced
	if !datasyncActive {
		files = append(files, active.file)
	}
	type txnSync struct {
		s       *segment
		file    vfs.File
		written int
	}
	var txnSegs []txnSync
	for _, s := range l.segments {
		if s.txnFile != nil && s.txnWritten > s.txnSynced {
			txnSegs = append(txnSegs, txnSync{s, s.txnFile, s.txnWritten})
			files = append(files, s.txnFile)
		}
	}
	dirVersion, needDirSync := l.dirVersion, l.dirVersion != l.dirSynced
	alreadyDurable := end == l.durableEnd && rolled == 0 && !needDirSync && len(txnSegs) == 0 && activeTrims == active.trimsSynced
	durable := l.durableEnd
	l.mu.RUnlock()
	if alreadyDurable {
		l.synced = activeExtent
		return durable, nil
	}

	for _, f := range files {
		if err := f.Sync(); err != nil {
			return durable, l.fail(fmt.Errorf("fsync %s: %w", f.Name(), err))
		}
	}
	if datasyncActive {
		if err := vfs.Datasync(active.file); err != nil {
			return durable, l.fail(fmt.Errorf("fdatasync %s: %w", active.file.Name(), err))
		}
	}
	if needDirSync {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return durable, l.fail(fmt.Errorf("sync dir %s: %w", l.dir, err))
		}
	}
	// Every segment before the active one is now durable with its indexes:
	// recovery can start at the active segment.
	l.mu.RLock()
	damaged := l.damagedFrom >= 0
	l.mu.RUnlock()
	if active.base > l.recoveryPoint && !damaged {
		if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, active.base); err != nil {
			// Only costs a longer recovery after a crash.
			l.logger.Warn("recovery point not saved", "dir", l.dir, "err", err)
		} else {
			l.recoveryPoint = active.base
		}
	}

	l.mu.Lock()
	defer l.unlock()
	for _, s := range l.unsynced[:rolled] {
		s.closePendingIndexFiles()
	}
	for _, ts := range txnSegs {
		// Entries written meanwhile stay counted as unsynced; a file
		// closed and rewritten meanwhile (writeTxnIndex syncs it) is
		// not this one.
		if ts.s.txnFile == ts.file {
			ts.s.txnSynced = max(ts.s.txnSynced, ts.written)
		}
	}
	l.unsynced = l.unsynced[rolled:]
	if needDirSync {
		l.dirSynced = dirVersion
	}
	l.durableEnd = max(l.durableEnd, end)
	l.synced = activeExtent
	active.trimsSynced = max(active.trimsSynced, activeTrims)
	// Off the fsync just done: the next one makes the zeros durable.
	l.refillZeroTailLocked(appended - l.syncedAppended)
	l.syncedAppended = max(l.syncedAppended, appended)
	return l.durableEnd, nil
}
