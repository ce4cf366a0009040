package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Names inside the quorum directory.
const (
	logDirName        = "log"
	hardStateFileName = "hardstate"
	snapshotFileName  = "snapshot"
	// bootstrapFileName holds a dynamic quorum's initial configuration
	// (an index-0 snapshot whose data is a membership envelope), written
	// once when the directory is new, so that every later start rebuilds
	// the membership from the same base plus the log's changes.
	bootstrapFileName = "bootstrap"
)

// maxSnapshotFileBytes bounds what load reads into memory for one snapshot:
// a larger file is refused rather than allocated.
const maxSnapshotFileBytes = 1 << 30

// maxHardStateFileBytes bounds the HardState file (three varints, in practice
// a few dozen bytes).
const maxHardStateFileBytes = 4 << 10

// disk is the durable Raft state of one node. It is not safe for concurrent
// use: the Core calls it from one goroutine.
//
// Write order (each step durable before the next starts), which is what makes
// every crash point recoverable:
//   - a received snapshot: the snapshot file, then the log restarted at the
//     snapshot index;
//   - entries: truncate a conflicting suffix, append, fsync;
//   - the HardState last, so its commit index never points past entries
//     that are not on disk.
//
// Compaction writes the snapshot file before moving the log start, so the
// entries it drops are always covered by a durable snapshot.
type disk struct {
	fs     vfs.FS
	dir    string
	logger *slog.Logger
	log    *storage.Log
}

// openDisk opens (creating if needed) the quorum directory. segmentBytes
// sizes the entry log's segments; compaction frees whole segments only.
func openDisk(fs vfs.FS, dir string, segmentBytes int64, logger *slog.Logger) (*disk, error) {
	dir = filepath.Clean(dir)
	if err := vfs.MkdirAllDurably(fs, dir); err != nil {
		return nil, fmt.Errorf("open quorum dir %s: %w", dir, err)
	}
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.SegmentMs = 0    // no clock: segments roll by size only
	cfg.RetentionMs = -1 // entries go only through compaction
	cfg.RetentionBytes = -1
	l, err := storage.Open(fs, filepath.Join(dir, logDirName), cfg, storage.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("open quorum log: %w", err)
	}
	return &disk{fs: fs, dir: dir, logger: logger, log: l}, nil
}

// close syncs and closes the entry log.
func (d *disk) close() error {
	if err := d.log.Close(); err != nil {
		return fmt.Errorf("close quorum log: %w", err)
	}
	return nil
}

// appendEntries persists entries, replacing any stored entries at or after
// the first one's index (Raft overwrote an uncommitted suffix), and fsyncs.
func (d *disk) appendEntries(entries []*raftpb.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	first := int64(entries[0].GetIndex()) - 1
	leo := d.log.LogEndOffset()
	if first < 0 || first > leo {
		return fmt.Errorf("append entries from index %d: log ends at index %d", first+1, leo)
	}
	if first < leo {
		// Truncate is durable on return, so the old suffix cannot come back
		// behind the new entries after a crash.
		if err := d.log.Truncate(first); err != nil {
			return fmt.Errorf("overwrite entries from index %d: %w", first+1, err)
		}
	}
	for _, e := range entries {
		b, err := encodeEntryBatch(e)
		if err != nil {
			return err
		}
		res, err := d.log.Append(b, -1, 0)
		if err != nil {
			return fmt.Errorf("append entry %d: %w", e.GetIndex(), err)
		}
		if res.BaseOffset != int64(e.GetIndex())-1 {
			return fmt.Errorf("append entry %d: stored at offset %d", e.GetIndex(), res.BaseOffset)
		}
	}
	if _, err := d.log.Sync(); err != nil {
		return fmt.Errorf("sync entries up to index %d: %w", entries[len(entries)-1].GetIndex(), err)
	}
	return nil
}

// saveHardState replaces the HardState file durably.
func (d *disk) saveHardState(hs *raftpb.HardState) error {
	data, err := encodeStateFile(hs)
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(d.fs, d.dir, filepath.Join(d.dir, hardStateFileName), data); err != nil {
		return fmt.Errorf("save hard state: %w", err)
	}
	return nil
}

// saveSnapshotFile replaces the snapshot file durably.
func (d *disk) saveSnapshotFile(snap *raftpb.Snapshot) error {
	data, err := encodeStateFile(snap)
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(d.fs, d.dir, filepath.Join(d.dir, snapshotFileName), data); err != nil {
		return fmt.Errorf("save snapshot at index %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	return nil
}

// installSnapshot persists a snapshot received from the leader: the file
// first, then the log emptied and restarted just after it. A crash in
// between leaves old entries that load discards (see load).
func (d *disk) installSnapshot(snap *raftpb.Snapshot) error {
	if err := d.saveSnapshotFile(snap); err != nil {
		return err
	}
	index := snap.GetMetadata().GetIndex()
	if err := d.log.TruncateFullyAndStartAt(int64(index)); err != nil {
		return fmt.Errorf("restart log after snapshot at index %d: %w", index, err)
	}
	return nil
}

// compact saves a snapshot taken locally and then drops the entries up to
// and including compactIndex (which must not exceed the snapshot's index).
func (d *disk) compact(snap *raftpb.Snapshot, compactIndex uint64) error {
	if compactIndex > snap.GetMetadata().GetIndex() {
		return fmt.Errorf("compact to index %d beyond snapshot index %d", compactIndex, snap.GetMetadata().GetIndex())
	}
	if err := d.saveSnapshotFile(snap); err != nil {
		return err
	}
	if compactIndex == 0 {
		return nil
	}
	// Index compactIndex+1 is offset compactIndex: the new log start.
	if err := d.log.DeleteBefore(int64(compactIndex)); err != nil {
		return fmt.Errorf("compact log to index %d: %w", compactIndex, err)
	}
	return nil
}

// loaded is what load found on disk.
type loaded struct {
	storage   *raft.MemoryStorage
	hardState *raftpb.HardState // empty if none was saved
	snapshot  *raftpb.Snapshot  // nil if none was saved
}

// bootstrap returns a dynamic quorum's initial configuration: the one the
// directory recorded, or (for a new directory) proposed, saved now. A
// directory that already holds Raft state without one was written by a
// static quorum, and is refused: switching a quorum from
// controller.quorum.voters to dynamic membership is not supported.
func (d *disk) bootstrap(proposed *raftpb.Snapshot) (*raftpb.Snapshot, error) {
	boot := &raftpb.Snapshot{}
	found, err := d.readStateFile(bootstrapFileName, maxSnapshotFileBytes, boot)
	if err != nil || found {
		return boot, err
	}
	snapFound, err := vfs.Exists(d.fs, filepath.Join(d.dir, snapshotFileName))
	if err != nil {
		return nil, err
	}
	hsFound, err := vfs.Exists(d.fs, filepath.Join(d.dir, hardStateFileName))
	if err != nil {
		return nil, err
	}
	if snapFound || hsFound || d.log.LogEndOffset() > 0 {
		return nil, fmt.Errorf("%s holds a static quorum's state (controller.quorum.voters): it cannot become a dynamic quorum", d.dir)
	}
	data, err := encodeStateFile(proposed)
	if err != nil {
		return nil, err
	}
	if err := vfs.WriteFileAtomic(d.fs, d.dir, filepath.Join(d.dir, bootstrapFileName), data); err != nil {
		return nil, fmt.Errorf("save quorum bootstrap: %w", err)
	}
	return proposed, nil
}

// isDynamic reports whether the directory belongs to a dynamic quorum.
func (d *disk) isDynamic() (bool, error) {
	return vfs.Exists(d.fs, filepath.Join(d.dir, bootstrapFileName))
}

// load rebuilds Raft's storage from disk. boot is the configuration before
// any change (a static quorum's voters, or a dynamic quorum's bootstrap);
// with static set, a snapshot recording other voters is refused (changing
// controller.quorum.voters is not supported).
func (d *disk) load(boot *raftpb.ConfState, static bool) (loaded, error) {
	ms := raft.NewMemoryStorage()
	snap, err := d.readSnapshot()
	if err != nil {
		return loaded{}, err
	}
	if snap != nil {
		// A static quorum upgraded to kraft.version 1 keeps its voters in
		// its snapshots' membership envelope instead.
		if got := snap.GetMetadata().GetConfState().GetVoters(); static && !hasMembership(snap.GetData()) && !sameIDs(got, boot.GetVoters()) {
			return loaded{}, fmt.Errorf("snapshot records voters %v, configuration says %v: changing controller.quorum.voters is not supported (use a dynamic quorum)", got, boot.GetVoters())
		}
		if err := ms.ApplySnapshot(snap); err != nil {
			return loaded{}, fmt.Errorf("load snapshot: %w", err)
		}
	} else {
		// An index-0 snapshot carrying only the configuration: how raft
		// wants a fresh group bootstrapped (see raft.RawNode.Bootstrap).
		boot := &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{ConfState: &raftpb.ConfState{
			Voters: slices.Clone(boot.GetVoters()), Learners: slices.Clone(boot.GetLearners())}}}
		if err := ms.ApplySnapshot(boot); err != nil {
			return loaded{}, fmt.Errorf("bootstrap configuration: %w", err)
		}
	}
	snapIndex, snapTerm := snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()

	entries, err := d.readEntriesAfter(snapIndex, snapTerm)
	if err != nil {
		return loaded{}, err
	}
	if err := ms.Append(entries); err != nil {
		return loaded{}, fmt.Errorf("load entries: %w", err)
	}
	last, _ := ms.LastIndex()

	hs, err := d.readHardState()
	if err != nil {
		return loaded{}, err
	}
	if hs.GetCommit() < snapIndex {
		// A crash after installing a snapshot but before the HardState
		// that followed it: the snapshot itself is committed state.
		hs.Commit = new(snapIndex)
	}
	if hs.GetCommit() > last {
		return loaded{}, fmt.Errorf("%w: hard state commits index %d but the log ends at %d", ErrCorruptState, hs.GetCommit(), last)
	}
	if err := ms.SetHardState(hs); err != nil {
		return loaded{}, fmt.Errorf("load hard state: %w", err)
	}
	d.logger.Info("quorum state loaded", "dir", d.dir, "term", hs.GetTerm(), "vote", hs.GetVote(),
		"commit", hs.GetCommit(), "snapshot_index", snapIndex, "last_index", last)
	return loaded{storage: ms, hardState: hs, snapshot: snap}, nil
}

// readEntriesAfter returns the stored entries after snapIndex. They are kept
// only if they continue the snapshot: the log starts right after it, or it
// holds the snapshot's own index with the snapshot's term. Otherwise they
// are a history the snapshot replaced (a crash after a received snapshot
// was saved but before the log was restarted) and the log is restarted now.
func (d *disk) readEntriesAfter(snapIndex, snapTerm uint64) ([]*raftpb.Entry, error) {
	start, end := d.log.LogStartOffset(), d.log.LogEndOffset()
	if snapIndex == 0 {
		if start != 0 {
			return nil, fmt.Errorf("%w: log starts at index %d but there is no snapshot", ErrCorruptState, start+1)
		}
		return d.readEntries(0, end)
	}
	if start > int64(snapIndex) {
		return nil, fmt.Errorf("%w: log starts at index %d, after the snapshot at %d: entries are missing", ErrCorruptState, start+1, snapIndex)
	}
	from := int64(snapIndex) // the offset of index snapIndex+1
	continues := start == from
	if !continues && end > from {
		at, err := d.readEntries(from-1, from)
		if err != nil {
			return nil, err
		}
		continues = len(at) == 1 && at[0].GetTerm() == snapTerm
	}
	if !continues {
		if end > start {
			d.logger.Warn("discarding log entries that do not follow the snapshot", "dir", d.dir,
				"snapshot_index", snapIndex, "log_start_index", start+1, "log_end_index", end)
		}
		if err := d.log.TruncateFullyAndStartAt(from); err != nil {
			return nil, fmt.Errorf("restart log after snapshot at index %d: %w", snapIndex, err)
		}
		return nil, nil
	}
	return d.readEntries(from, end)
}

// readEntries reads the entries at offsets [from, to).
func (d *disk) readEntries(from, to int64) ([]*raftpb.Entry, error) {
	var out []*raftpb.Entry
	for next := from; next < to; {
		buf, err := d.log.Read(next, storage.MaxReadBytes, to, true)
		if err != nil {
			return nil, fmt.Errorf("read quorum log at index %d: %w", next+1, err)
		}
		if len(buf) == 0 {
			return nil, fmt.Errorf("%w: read quorum log at index %d: nothing before index %d", ErrCorruptState, next+1, to+1)
		}
		err = batch.Split(buf, func(b []byte) error {
			e, err := decodeEntryBatch(b)
			if err != nil {
				return err
			}
			if e.GetIndex() != uint64(next)+1 {
				return fmt.Errorf("%w: expected index %d, found %d", ErrCorruptState, next+1, e.GetIndex())
			}
			out = append(out, e)
			next++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read quorum log: %w", err)
		}
	}
	return out, nil
}

// readSnapshot returns the saved snapshot, or nil if there is none.
func (d *disk) readSnapshot() (*raftpb.Snapshot, error) {
	snap := &raftpb.Snapshot{}
	found, err := d.readStateFile(snapshotFileName, maxSnapshotFileBytes, snap)
	if err != nil || !found {
		return nil, err
	}
	if snap.GetMetadata().GetIndex() == 0 {
		return nil, fmt.Errorf("%w: snapshot file has index 0", ErrCorruptState)
	}
	return snap, nil
}

// readHardState returns the saved HardState, or an empty one.
func (d *disk) readHardState() (*raftpb.HardState, error) {
	hs := &raftpb.HardState{}
	if _, err := d.readStateFile(hardStateFileName, maxHardStateFileBytes, hs); err != nil {
		return nil, err
	}
	return hs, nil
}

// readStateFile reads and decodes one checksummed state file.
func (d *disk) readStateFile(name string, maxBytes int64, m proto.Message) (bool, error) {
	path := filepath.Join(d.dir, name)
	st, err := d.fs.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if st.Size > maxBytes {
		return false, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrCorruptState, path, st.Size, maxBytes)
	}
	data, err := vfs.ReadFile(d.fs, path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return true, decodeStateFile(path, data, m)
}

// sameIDs reports whether two id lists hold the same ids, in any order.
func sameIDs(a, b []uint64) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
