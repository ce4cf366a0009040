package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/skein-log/skein/internal/vfs"
)

// The aborted-transaction index (Kafka's .txnindex): per segment, one entry
// per transaction aborted by a marker in that segment, in marker order. A
// read_committed fetch asks it which aborted transactions overlap the
// records it returns, so the consumer can drop their records.
//
// The index is derived data: every entry follows from the log's batches
// (the producer's first transactional batch and its ABORT marker). The
// replica rebuilds the whole list when it opens the log (it scans every
// batch header for the producer state anyway) and hands it to
// ReplaceAbortedTxns, which rewrites the files that disagree. So a torn or
// lost index write, a crash in the middle of a compaction swap or a
// truncation, all of which may leave a file behind its log, is repaired at
// the next open, and the index is never trusted without that check.
//
// Entry layout, as Kafka's AbortedTxn: version int16 (0), producer id,
// first offset, last offset (the marker's), last stable offset at the
// abort, each int64, big-endian: 34 bytes.

const (
	txnIndexSuffix    = ".txnindex"
	txnEntrySize      = 34
	txnEntryVersion   = 0
	maxTxnIndexBytes  = 64 << 20 // a file claiming more is not ours
	txnIndexFilePerm  = filePerm
	txnIndexOpenFlags = os.O_RDWR | os.O_CREATE
)

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	// LastOffset is the offset of the ABORT marker.
	LastOffset int64
	// LastStableOffset is the partition's first unstable offset once this
	// transaction ended: an index walk stops at an entry whose value
	// reaches its upper bound, since no later abort can overlap (Kafka's
	// collectAbortedTxns).
	LastStableOffset int64
}

func (a AbortedTxn) encode(dst []byte) {
	be := binary.BigEndian
	be.PutUint16(dst, txnEntryVersion)
	be.PutUint64(dst[2:], uint64(a.ProducerID))
	be.PutUint64(dst[10:], uint64(a.FirstOffset))
	be.PutUint64(dst[18:], uint64(a.LastOffset))
	be.PutUint64(dst[26:], uint64(a.LastStableOffset))
}

func decodeAbortedTxns(b []byte) []AbortedTxn {
	var out []AbortedTxn
	be := binary.BigEndian
	for ; len(b) >= txnEntrySize; b = b[txnEntrySize:] {
		if be.Uint16(b) != txnEntryVersion {
			break // not an entry we wrote: the rest is rebuilt at open
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(be.Uint64(b[2:])),
			FirstOffset:      int64(be.Uint64(b[10:])),
			LastOffset:       int64(be.Uint64(b[18:])),
			LastStableOffset: int64(be.Uint64(b[26:])),
		})
	}
	return out
}

func encodeAbortedTxns(entries []AbortedTxn) []byte {
	b := make([]byte, len(entries)*txnEntrySize)
	for i, a := range entries {
		a.encode(b[i*txnEntrySize:])
	}
	return b
}

func (s *segment) txnIndexPath() string { return segmentFileName(s.dir, s.base, txnIndexSuffix) }

// loadTxnIndex reads the segment's .txnindex as found on disk, keeping the
// whole entries whose marker lies inside the segment as recovered. A torn
// last entry or a missing file loses entries only until the replica's
// check (ReplaceAbortedTxns) puts them back.
func (l *Log) loadTxnIndex(s *segment) error {
	s.aborted = nil
	path := s.txnIndexPath()
	ok, err := vfs.Exists(l.fs, path)
	if err != nil || !ok {
		return err
	}
	f, err := l.fs.OpenFile(path, os.O_RDONLY, txnIndexFilePerm)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("size of %s: %w", path, err)
	}
	size = min(size, maxTxnIndexBytes)
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); err != nil && n != len(buf) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, a := range decodeAbortedTxns(buf) {
		if a.LastOffset >= s.base && a.LastOffset < s.next {
			s.aborted = append(s.aborted, a)
		}
	}
	return nil
}

// writeTxnIndex replaces the segment's .txnindex with its entries (no
// file when there are none) and syncs it. Callers hold syncMu and mu.
func (l *Log) writeTxnIndex(s *segment) error {
	s.closeTxnFile()
	path := s.txnIndexPath()
	if len(s.aborted) == 0 {
		return removeIfExists(l.fs, path)
	}
	f, err := vfs.Create(l.fs, path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteAt(encodeAbortedTxns(s.aborted), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	l.dirVersion++
	return nil
}

func (s *segment) closeTxnFile() {
	if s.txnFile != nil {
		s.txnFile.Close()
		s.txnFile = nil
	}
	s.txnWritten, s.txnSynced = 0, 0
}

// AddAbortedTxn records a transaction aborted by the marker at
// a.LastOffset, which must be the log's last batch (the replica calls it
// right after appending the marker). The entry is written to the marker's
// segment's .txnindex and fsynced with the log's next Sync.
func (l *Log) AddAbortedTxn(a AbortedTxn) error {
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	s := l.segments[l.segmentFor(a.LastOffset)]
	if a.LastOffset < s.base || a.LastOffset >= s.next {
		return fmt.Errorf("%w: aborted transaction marker at %d outside the log's segment [%d, %d)", ErrInvalidBatch, a.LastOffset, s.base, s.next)
	}
	if n := len(s.aborted); n > 0 && s.aborted[n-1].LastOffset >= a.LastOffset {
		return fmt.Errorf("%w: aborted transaction marker at %d not after %d", ErrInvalidBatch, a.LastOffset, s.aborted[n-1].LastOffset)
	}
	if s.txnFile == nil {
		f, err := l.fs.OpenFile(s.txnIndexPath(), txnIndexOpenFlags, txnIndexFilePerm)
		if err != nil {
			return l.failLocked(fmt.Errorf("open %s: %w", s.txnIndexPath(), err))
		}
		s.txnFile = f
		l.dirVersion++
	}
	var buf [txnEntrySize]byte
	a.encode(buf[:])
	if _, err := s.txnFile.WriteAt(buf[:], int64(len(s.aborted))*txnEntrySize); err != nil {
		// The entry is derived: the next open rebuilds it. Serving
		// without it would hide an abort from read_committed readers,
		// so the log fails instead.
		return l.failLocked(fmt.Errorf("write %s: %w", s.txnIndexPath(), err))
	}
	s.aborted = append(s.aborted, a)
	s.txnWritten++
	return nil
}

// AbortedTxns lists the aborted transactions a read of [from, upTo) must
// report: every one whose marker is at or after from and whose first
// offset is below upTo (Kafka's collectAbortedTxns). Entries live with
// their markers, so the walk starts at from's segment.
func (l *Log) AbortedTxns(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		for _, a := range l.segments[i].aborted {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// AllAbortedTxns lists every entry of the index, in marker order (tests
// and the replica's check).
func (l *Log) AllAbortedTxns() []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	for _, s := range l.segments {
		out = append(out, s.aborted...)
	}
	return out
}

// ReplaceAbortedTxns makes the index hold exactly entries (every aborted
// transaction whose marker is in the log, in marker order: what the
// replica found scanning the log), rewriting the .txnindex of each segment
// whose entries differ. It returns how many segments it rewrote.
func (l *Log) ReplaceAbortedTxns(entries []AbortedTxn) (rewritten int, err error) {
	// syncMu too: a rewrite closes a .txnindex handle a Sync may be
	// about to fsync.
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].LastOffset <= entries[i-1].LastOffset {
			return 0, errors.New("aborted transactions not in marker order")
		}
	}
	j := 0
	for _, s := range l.segments {
		var want []AbortedTxn
		for j < len(entries) && entries[j].LastOffset < s.next {
			if entries[j].LastOffset >= s.base {
				want = append(want, entries[j])
			}
			j++
		}
		if slices.Equal(want, s.aborted) {
			continue
		}
		s.aborted = want
		if err := l.writeTxnIndex(s); err != nil {
			return rewritten, l.failLocked(err)
		}
		rewritten++
	}
	if rewritten > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return rewritten, l.failLocked(fmt.Errorf("sync dir %s: %w", l.dir, err))
		}
		l.dirSynced = l.dirVersion
	}
	return rewritten, nil
}

// truncateTxnIndex drops the segment's entries whose marker is at or after
// end and rewrites its file. Callers hold syncMu and mu.
func (l *Log) truncateTxnIndex(s *segment, end int64) error {
	n := len(s.aborted)
	s.aborted = slices.DeleteFunc(s.aborted, func(a AbortedTxn) bool { return a.LastOffset >= end })
	if len(s.aborted) == n {
		return nil
	}
	return l.writeTxnIndex(s)
}
