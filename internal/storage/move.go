package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/logmove"
	"github.com/skein-log/skein/internal/vfs"
)

// Moving a partition's log to another log directory of the broker
// (AlterReplicaLogDirs, KIP-113; the decisions are internal/logmove's).
//
// The future log is an ordinary Log in <root>/<name>.<id>-future, filled
// by CopyFrom with the current log's batches as they are stored (same
// offsets, epochs and CRCs, checked again on the way in). AdoptFuture then
// swaps it in without replacing the *Log every reader holds: the Log
// struct takes over the future's segments and directory under all of its
// locks, so a fetch, the flusher, the cleaner or retention running on it
// either finished before or starts after, on the new files. The order on
// disk, each step durable before the next:
//
//  1. the future log is closed cleanly (fsynced, clean-shutdown marker),
//     holding everything the current log holds: appends are paused;
//  2. the marker file replica-move, naming the future's directory, is
//     written in the current log's directory: the swap is decided;
//  3. the future directory is renamed to <name> in its root, and the root
//     synced;
//  4. the current directory is renamed <name>.<id>-delete in its root, the
//     root synced, and removed later (as a deleted partition is).
//
// RecoverMoves repairs what a crash between the steps leaves (see
// logmove.Recover): before step 2 the current log is authoritative and the
// future kept only as far as it is a prefix of it (Log.ResumeFuture, once
// the partition is open); after it the swap is finished.

const (
	// FutureDirSuffix ends a future log's directory name (Kafka's).
	FutureDirSuffix = "-future"
	// moveMarkerFile decides a swap: it names the future directory that
	// replaces the one it is in.
	moveMarkerFile = "replica-move"
	// retiredDirSuffix ends a superseded log's directory name; the
	// broker removes such directories as it does deleted partitions'.
	retiredDirSuffix = "-delete"
)

// ErrFutureBehind: AdoptFuture found the future log not caught up (a
// truncation, or appends, the copier has not followed yet).
var ErrFutureBehind = errors.New("future log is behind the current log")

// FutureDir is the directory of a future log of partition name in root;
// id keeps two moves of one partition apart (Kafka uses a UUID).
func FutureDir(root, name, id string) string {
	return filepath.Join(root, name+"."+id+FutureDirSuffix)
}

// ParseFutureDirName splits a future directory's name into the partition's
// name and the move's id.
func ParseFutureDirName(base string) (name, id string, ok bool) {
	rest, ok := strings.CutSuffix(base, FutureDirSuffix)
	if !ok {
		return "", "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot <= 0 || dot == len(rest)-1 {
		return "", "", false
	}
	return rest[:dot], rest[dot+1:], true
}

// TakeRewound reports the lowest log end offset a truncation or restart
// left since the last call, and clears it: what a future log copied at or
// above it may no longer match this log.
func (l *Log) TakeRewound() (offset int64, ok bool) {
	l.mu.Lock()
	defer l.unlock()
	offset, ok = l.rewoundTo, l.rewoundTo != math.MaxInt64
	l.rewoundTo = math.MaxInt64
	return offset, ok
}

// noteRewoundLocked records that the log end went back to end. Callers
// hold mu exclusively.
func (l *Log) noteRewoundLocked(end int64) {
	l.rewoundTo = min(l.rewoundTo, end)
}

// PauseCleaning waits for a compaction pass under way and holds off the
// next until ResumeCleaning: a pass reads segments without the log's lock
// and must not run across AdoptFuture. Appends and reads go on.
func (l *Log) PauseCleaning() { l.cleanMu.Lock() }

// ResumeCleaning ends PauseCleaning.
func (l *Log) ResumeCleaning() { l.cleanMu.Unlock() }

// maxCopyBytes bounds one CopyFrom read.
const maxCopyBytes = 1 << 20

// CopyFrom appends to l (a future log) the batches of src from offset on,
// up to about maxBytes (at least one batch), and returns how many bytes it
// copied. offset must be l's end; an empty l whose start is inside src's
// batch starts again at that batch's base.
func (l *Log) CopyFrom(src *Log, offset int64, maxBytes int) (int, error) {
	if end := l.LogEndOffset(); offset != end {
		return 0, fmt.Errorf("%w: copy into %s from %d: future ends at %d", ErrOffsetMismatch, l.Dir(), offset, end)
	}
	maxBytes = min(max(maxBytes, 1), maxCopyBytes)
	data, err := src.Read(offset, maxBytes, src.LogEndOffset(), true)
	if err != nil {
		return 0, fmt.Errorf("read %s from %d: %w", src.Dir(), offset, err)
	}
	n := 0
	err = batch.Split(data, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() < offset {
			return nil // a read starts at the batch holding offset
		}
		if h.BaseOffset < offset && n == 0 && l.LogStartOffset() == offset {
			// src starts inside this batch (DeleteRecords): an empty
			// future starts at its base, as Kafka's does
			// (UnexpectedAppendOffsetException); AdoptFuture drops the
			// head below src's start.
			if err := l.TruncateFullyAndStartAt(h.BaseOffset); err != nil {
				return err
			}
		}
		if _, err := l.AppendReplica(b, h.MaxTimestamp); err != nil {
			return err
		}
		n += len(b)
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("copy %s into %s: %w", src.Dir(), l.Dir(), err)
	}
	return n, nil
}

// AdoptFuture makes fut, a future log holding everything l holds (caught
// up while l's appends are paused: the caller holds the partition's lock
// and PauseCleaning), l's log, in fut's root under l's name (the steps
// are in the comment above). fut is closed by it. It returns the
// superseded directory, renamed -delete, for the caller to remove ("" when
// that rename failed: RecoverMoves retires it at the next start).
//
// ErrFutureBehind (and any error before the swap is decided) leaves l as
// it was. A failure after the decision fails l: its next open, after
// RecoverMoves, is the swapped log.
func (l *Log) AdoptFuture(fut *Log) (retired string, err error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return "", err
	}
	futDir := fut.Dir()
	name, id, ok := ParseFutureDirName(filepath.Base(futDir))
	if !ok || name != filepath.Base(l.dir) {
		return "", fmt.Errorf("%s is not a future log of %s", futDir, l.dir)
	}
	if l.rewoundTo != math.MaxInt64 {
		return "", fmt.Errorf("%w: %s was truncated to %d", ErrFutureBehind, l.dir, l.rewoundTo)
	}
	if end := fut.LogEndOffset(); end != l.leo() {
		return "", fmt.Errorf("%w: %s ends at %d, %s at %d", ErrFutureBehind, futDir, end, l.dir, l.leo())
	}
	// Retention (or DeleteRecords) may have moved the start since the
	// copy: the future drops the same head.
	if err := fut.DeleteBefore(l.logStart); err != nil {
		return "", fmt.Errorf("adopt %s: %w", futDir, err)
	}
	if start := fut.LogStartOffset(); start != l.logStart {
		return "", fmt.Errorf("%w: %s starts at %d, %s at %d", ErrFutureBehind, futDir, start, l.dir, l.logStart)
	}
	// Derived state the copy did not carry: epochs that started without
	// a batch (a leader that appended nothing), aborted transactions
	// (the replica writes them beside its markers), the gaps marker.
	fut.epochs.mu.Lock()
	err = fut.epochs.replace(l.epochs.Entries())
	fut.epochs.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("adopt %s: epochs: %w", futDir, err)
	}
	var aborted []AbortedTxn
	for _, s := range l.segments {
		aborted = append(aborted, s.aborted...)
	}
	if _, err := fut.ReplaceAbortedTxns(aborted); err != nil {
		return "", fmt.Errorf("adopt %s: aborted transactions: %w", futDir, err)
	}
	if l.gaps {
		fut.mu.Lock()
		err := fut.allowGapsLocked()
		fut.unlock()
		if err != nil {
			return "", fmt.Errorf("adopt %s: %w", futDir, err)
		}
	}
	if err := fut.Close(); err != nil {
		return "", fmt.Errorf("adopt %s: %w", futDir, err)
	}
	// Step 2: decided.
	if err := vfs.WriteFileAtomic(l.fs, l.dir, filepath.Join(l.dir, moveMarkerFile), []byte(futDir+"\n")); err != nil {
		return "", fmt.Errorf("adopt %s: record the swap: %w", futDir, err)
	}
	// Step 3.
	newDir := filepath.Join(filepath.Dir(futDir), name)
	if err := l.fs.Rename(futDir, newDir); err != nil {
		return "", l.failLocked(fmt.Errorf("adopt %s: rename to %s: %w", futDir, newDir, err))
	}
	if err := l.fs.SyncDir(filepath.Dir(newDir)); err != nil {
		return "", l.failLocked(fmt.Errorf("adopt %s: sync %s: %w", futDir, filepath.Dir(newDir), err))
	}
	nl, err := Open(l.fs, newDir, l.cfg, Options{Logger: l.logger})
	if err != nil {
		return "", l.failLocked(fmt.Errorf("adopt %s: %w", newDir, err))
	}
	old := l.dir
	l.transplantLocked(nl)
	// Step 4. The new log is in place whatever happens here: a failure
	// leaves the old directory, marked, for RecoverMoves to retire.
	retired = filepath.Join(filepath.Dir(old), name+"."+id+retiredDirSuffix)
	if err := l.fs.Rename(old, retired); err != nil {
		l.logger.Warn("superseded log not retired; it is at the next start", "dir", old, "err", err)
		return "", nil
	}
	if err := l.fs.SyncDir(filepath.Dir(old)); err != nil {
		l.logger.Warn("retirement of superseded log not synced; it is finished at the next start", "dir", old, "err", err)
	}
	l.logger.Info("log moved", "from", old, "to", newDir)
	return retired, nil
}

// transplantLocked makes l the log nl opened, closing l's old files. nl
// is not used again. Callers hold l.syncMu and l.mu exclusively. Every
// field of the on-disk state is taken over; the locks, the epoch cache
// object (the replica holds it; its contents and checkpoint path are
// taken over) and the settings stay.
func (l *Log) transplantLocked(nl *Log) {
	l.forgetSharedLocked()
	for _, s := range l.segments {
		s.close()
	}
	l.dir = nl.dir
	l.segments = nl.segments
	l.logStart = nl.logStart
	l.durableEnd = nl.durableEnd
	// nl's files: synced as far as its Syncs went, none advised out.
	l.synced, l.cacheMark = nl.synced, cacheMark{}
	l.recoveryPoint = nl.recoveryPoint
	l.unsynced = nl.unsynced
	l.dirVersion, l.dirSynced = nl.dirVersion, nl.dirSynced
	l.failed = nl.failed
	l.damagedFrom = nl.damagedFrom
	l.gaps = nl.gaps
	l.cleanedTo = nl.cleanedTo
	l.tombstoneHorizon = nl.tombstoneHorizon
	l.forceFullRecovery = nl.forceFullRecovery
	l.rewoundTo = math.MaxInt64
	l.epochs.takeOver(nl.epochs)
	nl.segments, nl.closed = nil, true
}

// ResumedMove is a move a restart interrupted, to go on once its partition
// is open: Future, its future log in Root, is kept for Log.ResumeFuture to
// check against the current log.
type ResumedMove struct {
	Root   string
	Future string
}

// RecoverMoves repairs, in the broker's log directories roots, what
// interrupted moves left (logmove.Recover decides), before any partition
// is opened. It returns the moves to go on with, by partition name.
func RecoverMoves(fs vfs.FS, roots []string, opts Options) (map[string]ResumedMove, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	byName := map[string]map[string]*logmove.Found{}
	found := func(name, root string) *logmove.Found {
		if byName[name] == nil {
			byName[name] = map[string]*logmove.Found{}
		}
		f := byName[name][root]
		if f == nil {
			f = &logmove.Found{Root: root}
			byName[name][root] = f
		}
		return f
	}
	for _, root := range roots {
		entries, err := fs.ReadDir(root)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("recover moves: list %s: %w", root, err)
		}
		for _, e := range entries {
			if !e.IsDir {
				continue
			}
			if name, _, ok := ParseFutureDirName(e.Name); ok {
				f := found(name, root)
				f.Futures = append(f.Futures, filepath.Join(root, e.Name))
				continue
			}
			marker := filepath.Join(root, e.Name, moveMarkerFile)
			data, err := vfs.ReadFile(fs, marker)
			if errors.Is(err, os.ErrNotExist) {
				continue // a partition (or other) directory not moving
			}
			if err != nil {
				return nil, fmt.Errorf("recover moves: read %s: %w", marker, err)
			}
			f := found(e.Name, root)
			f.Live, f.Marker = true, strings.TrimSpace(string(data))
		}
	}
	resume := map[string]ResumedMove{}
	for name, roots2 := range byName {
		// Unmarked live copies were not listed above (every partition
		// directory would be); look for them now.
		for _, root := range roots {
			if f := roots2[root]; f != nil && f.Live {
				continue
			}
			if ok, err := vfs.Exists(fs, filepath.Join(root, name)); err != nil {
				return nil, fmt.Errorf("recover moves: %w", err)
			} else if ok {
				found(name, root).Live = true
			}
		}
		var list []logmove.Found
		for _, root := range roots {
			if f := byName[name][root]; f != nil {
				list = append(list, *f)
			}
		}
		fixes, err := logmove.Recover(name, list)
		if err != nil {
			return nil, fmt.Errorf("recover moves: %w", err)
		}
		for _, fx := range fixes {
			if err := applyMoveFix(fs, fx, logger); err != nil {
				return nil, fmt.Errorf("recover moves of %s: %w", name, err)
			}
			if fx.Kind == logmove.Resume {
				resume[name] = ResumedMove{Root: fx.To, Future: fx.Dir}
			}
		}
	}
	return resume, nil
}

func applyMoveFix(fs vfs.FS, fx logmove.Fix, logger *slog.Logger) error {
	switch fx.Kind {
	case logmove.Promote:
		logger.Info("finishing an interrupted log move", "future", fx.Dir, "to", fx.To)
		if err := fs.Rename(fx.Dir, fx.To); err != nil {
			return fmt.Errorf("rename %s to %s: %w", fx.Dir, fx.To, err)
		}
		return syncDir(fs, filepath.Dir(fx.To))
	case logmove.Retire:
		logger.Info("removing the log a move superseded", "dir", fx.Dir)
		name, id := filepath.Base(fx.Dir), "recovered"
		if data, err := vfs.ReadFile(fs, filepath.Join(fx.Dir, moveMarkerFile)); err == nil {
			if _, mid, ok := ParseFutureDirName(filepath.Base(strings.TrimSpace(string(data)))); ok {
				id = mid
			}
		}
		gone := filepath.Join(filepath.Dir(fx.Dir), name+"."+id+retiredDirSuffix)
		if err := fs.Rename(fx.Dir, gone); err != nil {
			return fmt.Errorf("rename %s: %w", fx.Dir, err)
		}
		if err := syncDir(fs, filepath.Dir(fx.Dir)); err != nil {
			return err
		}
		if err := fs.RemoveAll(gone); err != nil {
			return fmt.Errorf("remove %s: %w", gone, err)
		}
		return nil
	case logmove.Discard:
		logger.Info("discarding the future log of an unfinished move", "dir", fx.Dir)
		if err := fs.RemoveAll(fx.Dir); err != nil {
			return fmt.Errorf("remove %s: %w", fx.Dir, err)
		}
		return syncDir(fs, filepath.Dir(fx.Dir))
	case logmove.Unmark:
		return removeDurably(fs, fx.Dir, filepath.Join(fx.Dir, moveMarkerFile))
	case logmove.Resume:
		return nil
	}
	return fmt.Errorf("unknown move fix %d", fx.Kind)
}

func syncDir(fs vfs.FS, dir string) error {
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// MoveProgress is what the copier of a move from src into its future log
// fut sees of both (logmove.Next's input); paused says whether src's
// appends are held. It takes src's rewound mark (TakeRewound).
func MoveProgress(src, fut *Log, paused bool) logmove.Progress {
	rw, has := src.TakeRewound()
	return logmove.Progress{
		SrcStart: src.LogStartOffset(), SrcEnd: src.LogEndOffset(),
		FutStart: fut.LogStartOffset(), FutEnd: fut.LogEndOffset(),
		Rewound: rw, HasRewound: has, Paused: paused,
		BehindBytes: max(src.Size()-fut.Size(), 0),
	}
}

// ApplyMoveStep carries out one of logmove.Next's I/O steps (Copy of up to
// limit bytes, Truncate, Reset, Swap) of the move from src into fut; Pause
// and Release are the caller's (the partition's lock). It returns the
// bytes copied and, once swapped, swapped and the superseded directory
// (AdoptFuture's). A swap found behind is no error: the caller asks Next
// again.
func ApplyMoveStep(src, fut *Log, st logmove.Step, limit int) (copied int, swapped bool, retired string, err error) {
	switch st.Kind {
	case logmove.Copy:
		copied, err = fut.CopyFrom(src, st.Offset, limit)
		if err == nil && copied == 0 {
			// Only offsets without batches are left (a compacted or
			// restarted tail): nothing could ever be copied.
			err = fmt.Errorf("no batches between %d and the log end", st.Offset)
		}
		return copied, false, "", err
	case logmove.Truncate:
		return 0, false, "", fut.Truncate(st.Offset)
	case logmove.Reset:
		return 0, false, "", fut.TruncateFullyAndStartAt(st.Offset)
	case logmove.Swap:
		retired, err = src.AdoptFuture(fut)
		if errors.Is(err, ErrFutureBehind) {
			return 0, false, "", nil
		}
		return 0, err == nil, retired, err
	}
	return 0, false, "", fmt.Errorf("move step %v is the caller's", st.Kind)
}

// ParsePartitionDirName splits the name of a directory in a log directory:
// a partition's, <topic>-<index>, or a future log of one (future). ok is
// false for any other name.
func ParsePartitionDirName(base string) (topic string, index int32, future, ok bool) {
	name := base
	if n, _, isFuture := ParseFutureDirName(base); isFuture {
		name, future = n, true
	}
	cut := strings.LastIndexByte(name, '-')
	if cut <= 0 {
		return "", 0, false, false
	}
	i, err := strconv.ParseInt(name[cut+1:], 10, 32)
	if err != nil || i < 0 {
		return "", 0, false, false
	}
	return name[:cut], int32(i), future, true
}

// DeleteDir deletes a log's directory dir crash-safely, as Kafka does:
// renamed <dir>.<tag>-delete first (durable with dir's parent), so a crash
// leaves either the whole log or a directory the broker sweeps, never a
// half-deleted log that looks whole.
func DeleteDir(fs vfs.FS, dir, tag string) error {
	gone := dir + "." + tag + retiredDirSuffix
	if err := fs.Rename(dir, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("delete %s: rename: %w", dir, err)
	}
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("delete %s: sync %s: %w", dir, filepath.Dir(dir), err)
	}
	if err := fs.RemoveAll(gone); err != nil {
		return fmt.Errorf("delete %s: %w", gone, err)
	}
	return nil
}
