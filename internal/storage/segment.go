package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// segment is one ".log" file and its indexes. The Log's mutex guards every
// field; the file itself is safe for concurrent ReadAt alongside one writer.
type segment struct {
	base int64
	dir  string
	file vfs.File // the .log file, open for reading and writing

	// size is the end of the last whole, checked batch. Readers never look
	// past it, so a write in progress (or a failed one) is invisible.
	size int64
	next int64 // offset after the last batch (base if empty)

	// zeroEnd is the end of the zero-filled write-ahead window past size
	// (zerotail.go): while zeroEnd > size the file is zeroEnd bytes long;
	// 0 when there is no window. trims counts the cuts of the file's
	// length (the window's, a failed append's undo), trimsSynced those an
	// fsync of the file covered.
	zeroEnd            int64
	trims, trimsSynced int

	index     offsetIndex
	timeIndex timeIndex

	maxTimestamp    int64 // largest batch max timestamp, -1 if none
	offsetOfMaxTime int64 // last offset of the batch holding maxTimestamp
	bytesSinceIndex int64 // bytes appended since the last index entry

	// rollStartMs is when the segment.ms clock started: the broker clock
	// at the first append, or, for a segment found on disk, its first
	// batch's max timestamp. -1 while the segment is empty.
	rollStartMs int64

	// pendingIndexFiles hold index files written at roll time but not yet
	// fsynced; the next Sync syncs and closes them.
	pendingIndexFiles []vfs.File

	// noIndexEntriesOnDisk: both index files are absent or empty on disk
	// (durably, or once the directory is next synced: a created segment
	// removed stale ones), so a close that finds the segment empty has
	// nothing to write. An idle replica of a broker with thousands of
	// them would otherwise create and fsync two files at every stop.
	noIndexEntriesOnDisk bool

	// aborted is the segment's aborted-transaction index (txn_index.go),
	// in marker order; txnFile is its .txnindex open for appends;
	// txnWritten counts the entries written to it, txnSynced those a Sync
	// covered.
	aborted               []AbortedTxn
	txnFile               vfs.File
	txnWritten, txnSynced int
}

func newSegmentState(dir string, base int64, file vfs.File) *segment {
	return &segment{
		base:            base,
		dir:             dir,
		file:            file,
		next:            base,
		maxTimestamp:    -1,
		offsetOfMaxTime: -1,
		rollStartMs:     -1,
	}
}

func (s *segment) logPath() string       { return segmentFileName(s.dir, s.base, logSuffix) }
func (s *segment) indexPath() string     { return segmentFileName(s.dir, s.base, indexSuffix) }
func (s *segment) timeIndexPath() string { return segmentFileName(s.dir, s.base, timeIndexSuffix) }

// createSegment creates an empty segment file (replacing any stale file of
// the same name). The directory entry is durable only after a SyncDir.
func createSegment(fs vfs.FS, dir string, base int64) (*segment, error) {
	path := segmentFileName(dir, base, logSuffix)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, filePerm)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		stale := segmentFileName(dir, base, suffix)
		if err := fs.Remove(stale); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, fmt.Errorf("remove stale %s: %w", stale, err)
		}
	}
	s := newSegmentState(dir, base, f)
	s.noIndexEntriesOnDisk = true
	return s, nil
}

// openSegmentFile opens an existing segment's log file; the caller loads or
// rebuilds its indexes.
func openSegmentFile(fs vfs.FS, dir string, base int64) (*segment, int64, error) {
	path := segmentFileName(dir, base, logSuffix)
	f, err := fs.OpenFile(path, os.O_RDWR, filePerm)
	if err != nil {
		return nil, 0, fmt.Errorf("open segment %s: %w", path, err)
	}
	fileSize, err := f.Size()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("size of segment %s: %w", path, err)
	}
	return newSegmentState(dir, base, f), fileSize, nil
}

// relative converts an absolute offset of this segment to an index offset.
// Offsets are kept within range by rolling (see fitsOffset).
func (s *segment) relative(offset int64) uint32 {
	return uint32(offset - s.base)
}

// fitsOffset reports whether lastOffset can be stored as a 32-bit relative
// offset in this segment's indexes.
func (s *segment) fitsOffset(lastOffset int64) bool {
	return lastOffset-s.base <= math.MaxInt32
}

// track updates indexes and statistics for a batch just placed at pos. Append
// and index rebuilding share it, so a rebuilt index equals the original.
// As in Kafka, a batch is indexed when more than interval bytes were
// appended since the previous index entry.
func (s *segment) track(h *batch.Header, pos int64, interval int, nowMs int64) {
	if s.rollStartMs < 0 {
		s.rollStartMs = nowMs
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTime = h.LastOffset()
	}
	if s.bytesSinceIndex > int64(interval) {
		s.index.add(s.relative(h.LastOffset()), uint32(pos))
		if s.offsetOfMaxTime >= 0 {
			s.timeIndex.maybeAdd(s.maxTimestamp, s.relative(s.offsetOfMaxTime))
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(h.Size())
	s.size = pos + int64(h.Size())
	s.next = h.LastOffset() + 1
}

// sealTimeIndex adds a final time index entry for the segment's max
// timestamp, so that the last entry of a sealed .timeindex always holds the
// segment's largest timestamp (as Kafka does on roll and close).
func (s *segment) sealTimeIndex() {
	if s.offsetOfMaxTime >= 0 {
		s.timeIndex.maybeAdd(s.maxTimestamp, s.relative(s.offsetOfMaxTime))
	}
}

// resetIndexes forgets all index state before a rebuild.
func (s *segment) resetIndexes() {
	s.index = offsetIndex{}
	s.timeIndex = timeIndex{}
	s.maxTimestamp, s.offsetOfMaxTime = -1, -1
	s.bytesSinceIndex = 0
	s.size = 0
	s.next = s.base
	s.rollStartMs = -1
}

// writeIndexFiles writes both index files from memory without syncing them;
// the handles are kept for the next Sync. Stale handles are closed first.
func (s *segment) writeIndexFiles(fs vfs.FS) error {
	s.closePendingIndexFiles()
	s.noIndexEntriesOnDisk = false
	for _, f := range []struct {
		path string
		data []byte
	}{{s.indexPath(), s.index.encode()}, {s.timeIndexPath(), s.timeIndex.encode()}} {
		file, err := vfs.Create(fs, f.path)
		if err != nil {
			return fmt.Errorf("create index %s: %w", f.path, err)
		}
		if _, err := file.WriteAt(f.data, 0); err != nil {
			file.Close()
			return fmt.Errorf("write index %s: %w", f.path, err)
		}
		s.pendingIndexFiles = append(s.pendingIndexFiles, file)
	}
	return nil
}

// closeIndexFiles writes the index files a close leaves (not synced:
// closeCleanly syncs them): none when the segment is empty and the files on
// disk hold no entry, which is what an empty segment's indexes are (Open
// reads an empty segment without its index files as empty indexes).
func (s *segment) closeIndexFiles(fs vfs.FS) error {
	if s.size == 0 && len(s.index.entries) == 0 && len(s.timeIndex.entries) == 0 && s.noIndexEntriesOnDisk {
		return nil
	}
	return s.writeIndexFiles(fs)
}

func (s *segment) closePendingIndexFiles() {
	for _, f := range s.pendingIndexFiles {
		f.Close()
	}
	s.pendingIndexFiles = nil
}

// syncFiles returns the files Sync must fsync for this segment.
func (s *segment) syncFiles() []vfs.File {
	return append([]vfs.File{s.file}, s.pendingIndexFiles...)
}

// close closes every handle of the segment.
func (s *segment) close() error {
	s.closePendingIndexFiles()
	s.closeTxnFile()
	if err := s.file.Close(); err != nil {
		return fmt.Errorf("close segment %s: %w", s.logPath(), err)
	}
	return nil
}

// remove closes the segment and deletes its files. The caller syncs the
// directory.
func (s *segment) remove(fs vfs.FS) error {
	closeErr := s.close()
	for _, path := range []string{s.logPath(), s.indexPath(), s.timeIndexPath(), s.txnIndexPath()} {
		if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	return closeErr
}

// readHeader reads and parses the batch header at pos (which must be below
// s.size).
func (s *segment) readHeader(pos int64) (batch.Header, error) {
	var hr headerReader
	defer hr.release()
	return hr.header(s, pos)
}

// headerScanBytes is how much of a segment a headerReader reads at once:
// twice the default index.interval.bytes, so that the walk from an index
// entry to the batch a fetch asks for is one pread, not one per batch
// header (a tailing follower of small batches walked about a dozen).
const headerScanBytes = 2 * DefaultIndexIntervalBytes

var headerScanBufs = sync.Pool{New: func() any { return new([headerScanBytes]byte) }}

// headerReader reads consecutive batch headers of a segment through one
// pooled buffer, refilled from the wanted position when a header lies
// outside it. The zero value is ready; release gives the buffer back.
type headerReader struct {
	buf  *[headerScanBytes]byte
	seg  *segment // whose bytes buf holds
	from int64    // segment position of buf[0]
	n    int      // bytes of buf read from there
}

func (r *headerReader) release() {
	if r.buf != nil {
		headerScanBufs.Put(r.buf)
		r.buf = nil
	}
}

// header parses the batch header at pos, checking that the batch lies
// within the segment's checked bytes.
func (r *headerReader) header(s *segment, pos int64) (batch.Header, error) {
	if pos+batch.HeaderSize > s.size {
		return batch.Header{}, fmt.Errorf("%w: %s: batch header at %d runs past the segment end %d", ErrCorrupt, s.logPath(), pos, s.size)
	}
	if r.seg != s || pos < r.from || pos+batch.HeaderSize > r.from+int64(r.n) {
		if r.buf == nil {
			r.buf = headerScanBufs.Get().(*[headerScanBytes]byte)
		}
		n, err := s.file.ReadAt(r.buf[:min(int64(headerScanBytes), s.size-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			r.seg = nil
			return batch.Header{}, fmt.Errorf("read %s at %d: %w", s.logPath(), pos, err)
		}
		// Only what was read: the rest of a pooled buffer is another
		// read's bytes.
		r.seg, r.from, r.n = s, pos, n
		if n < batch.HeaderSize {
			return batch.Header{}, fmt.Errorf("%w: %s: batch header at %d: the file ends at %d", ErrCorrupt, s.logPath(), pos, pos+int64(n))
		}
	}
	off := int(pos - r.from)
	h, err := batch.ParseHeader(r.buf[off : off+batch.HeaderSize])
	if err != nil {
		return h, fmt.Errorf("%w: %s: batch header at %d: %w", ErrCorrupt, s.logPath(), pos, err)
	}
	if pos+int64(h.Size()) > s.size || h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: %s: batch at %d (length %d) runs past the segment end %d", ErrCorrupt, s.logPath(), pos, h.Size(), s.size)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch whose last
// offset is >= offset, starting from the index's floor entry. found is false
// when every batch of the segment ends below offset. The walk checks that
// offsets (which the CRC does not cover) continue where they should (see
// follows), so a
// damaged offset field reads as corruption rather than as a wrong answer.
func (s *segment) findBatch(offset int64, gaps bool) (pos int64, h batch.Header, found bool, err error) {
	var hr headerReader
	defer hr.release()
	expected := s.base // base offset of the batch at pos
	if offset > s.base {
		if e, ok := s.index.lookup(s.relative(min(offset, s.next))); ok {
			pos = int64(e.pos)
			expected = -1 // checked against the entry below
			h, err = hr.header(s, pos)
			if err != nil {
				return 0, h, false, err
			}
			if h.LastOffset() != s.base+int64(e.rel) {
				return 0, h, false, fmt.Errorf("%w: %s: index names offset %d at %d, batch there ends at %d", ErrCorrupt, s.logPath(), s.base+int64(e.rel), pos, h.LastOffset())
			}
		}
	}
	for pos < s.size {
		if expected >= 0 {
			if h, err = hr.header(s, pos); err != nil {
				return 0, h, false, err
			}
			if !follows(expected, h.BaseOffset, gaps) || h.LastOffset() >= s.next {
				return 0, h, false, fmt.Errorf("%w: %s: batch at %d holds offsets [%d, %d], expected to start at %d below %d", ErrCorrupt, s.logPath(), pos, h.BaseOffset, h.LastOffset(), expected, s.next)
			}
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.Size())
		expected = h.LastOffset() + 1
	}
	return pos, h, false, nil
}
