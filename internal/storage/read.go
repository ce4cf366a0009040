package storage

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync/atomic"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/bufpool"
)

// MaxReadBytes caps one Read whatever maxBytes asks for, so a client's
// fetch size cannot make the broker allocate a whole segment. (A single
// batch larger than this is still returned whole with minOneBatch.)
const MaxReadBytes = 64 << 20

// Read returns whole batches starting with the one that contains offset:
// only batches whose last offset is < upTo, at most maxBytes in total, except
// that with minOneBatch a first batch larger than maxBytes is returned alone
// (Kafka's KIP-74 rule, so a consumer is never stuck). Reads stay within one
// segment. Every returned batch's CRC is checked.
//
// It returns ErrOffsetOutOfRange if offset is outside [LogStartOffset,
// LogEndOffset], and (nil, nil) at the log end or when nothing fits below
// upTo or in maxBytes.
//
// A batch that fails its CRC (or any other check) is never returned: the
// read fails with ErrCorrupt, and the log notes the damage durably so that
// its next open re-validates the damaged segment and cuts the log there
// (see noteDamage); the replica then copies the rest back from the leader.
func (l *Log) Read(offset int64, maxBytes int, upTo int64, minOneBatch bool) ([]byte, error) {
	data, _, damaged, err := l.read(offset, maxBytes, upTo, minOneBatch, false)
	if damaged >= 0 {
		l.noteDamage(damaged, err)
	}
	return data, err
}

// ReadShared is Read into a buffer from internal/bufpool, held through
// ref: the caller owns one hold and releases it (ref.Release) once nothing
// refers to data (a fetch answer's, once it is written). The fetch path
// otherwise allocated a fresh buffer of every read's size, most of the
// heap a leader serving followers allocates.
//
// A read of the same bytes as the log's last shared read, while its
// buffer is still held (by an answer, or pinned by the log), takes a share
// of that buffer instead of reading them again (sharedRead): a leader's followers ask for the same tail, just
// appended, within a few hundred µs of each other. Its batches' CRCs were
// checked when they were read; a batch that read did not return is
// checked now. With nothing to return, data and ref are nil.
func (l *Log) ReadShared(offset int64, maxBytes int, upTo int64, minOneBatch bool) (data []byte, ref *bufpool.Ref, err error) {
	data, ref, damaged, err := l.read(offset, maxBytes, upTo, minOneBatch, true)
	if damaged >= 0 {
		l.noteDamage(damaged, err)
	}
	return data, ref, err
}

// sharedRead is a log's last shared read (ReadShared): the fetch offset it
// answered, the segment and position its first batch starts at, how many
// bytes it read from there (its one pread, including what it did not
// return) and how many of them it returned: whole batches, CRC-checked.
//
// A later read of the same offset reads the same bytes, or a prefix of
// them, as long as the segment is still the log's and nothing was cut from
// the log since: below a segment's size its bytes change only by a
// truncation (and the appends after it), which drops the entry first
// (forgetSharedLocked); a compaction or a move replaces the segment. So
// when that read's window fits within the bytes read, it walks them
// instead of reading them again.
//
// The entry holds the buffer itself (pinned) until a read shares it, a
// read of other bytes replaces it, or the log loses or closes it: one
// follower's answer is often written before the other follower asks. The
// pinned buffers of all logs together are bounded by maxSharedPinned
// (sharedPinned); past it an entry holds nothing and is found only while
// an answer still holds its buffer. A partition whose last read no other
// read shares (a follower that lags or is down, a replication factor of
// 2) keeps at most that one buffer until its next read.
type sharedRead struct {
	seg     *segment
	offset  int64
	pos     int64
	read    int
	checked int
	ref     *bufpool.Ref // &held: one allocation for both
	held    bufpool.Ref
	pinned  atomic.Bool
}

// maxSharedPinned bounds the bytes of read buffers the logs of a process
// hold for reads to come (sharedRead): 32 one-MiB follower reads.
const maxSharedPinned = 32 << 20

// sharedPinned is the bytes of read buffers the logs hold now.
var sharedPinned atomic.Int64

// pin makes e hold its buffer, if the bound allows. e is not published
// yet.
func (e *sharedRead) pin() {
	size := int64(cap(e.ref.Bytes()))
	if sharedPinned.Add(size) > maxSharedPinned || !e.ref.Retain() {
		sharedPinned.Add(-size)
		return
	}
	e.pinned.Store(true)
}

// unpin releases e's own hold of its buffer, once.
func (e *sharedRead) unpin() {
	if e != nil && e.pinned.CompareAndSwap(true, false) {
		sharedPinned.Add(-int64(cap(e.ref.Bytes())))
		e.ref.Release()
	}
}

// forgetSharedLocked drops the shared read: the log is about to lose
// bytes it may cover, or closes. Callers hold mu exclusively.
func (l *Log) forgetSharedLocked() { l.shared.Swap(nil).unpin() }

// read does Read's work; damaged is the base of a segment found corrupt,
// or -1. With pooled the buffer is held through ref (ReadShared).
func (l *Log) read(offset int64, maxBytes int, upTo int64, minOneBatch, pooled bool) (data []byte, ref *bufpool.Ref, damaged int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	damaged = -1
	if l.closed {
		return nil, nil, damaged, fmt.Errorf("read %s: %w", l.dir, ErrClosed)
	}
	if offset < l.logStart || offset > l.leo() {
		return nil, nil, damaged, fmt.Errorf("%w: %s: offset %d, log covers [%d, %d]", ErrOffsetOutOfRange, l.dir, offset, l.logStart, l.leo())
	}
	if pooled {
		if data, ref, damaged, hit, err := l.readSharedLocked(offset, maxBytes, upTo, minOneBatch); hit {
			return data, ref, damaged, err
		}
	}
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		s := l.segments[i]
		pos, first, found, err := s.findBatch(offset, l.gaps)
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				damaged = s.base
			}
			return nil, nil, damaged, fmt.Errorf("read %s at offset %d: %w", l.dir, offset, err)
		}
		if !found {
			continue // nothing at or after offset here; try the next segment
		}
		if first.LastOffset() >= upTo {
			return nil, nil, damaged, nil
		}
		window, ok := s.readWindow(pos, first, maxBytes, minOneBatch)
		if !ok {
			return nil, nil, damaged, nil
		}
		var buf []byte
		if pooled {
			buf = bufpool.Get(int(window))
		} else {
			buf = make([]byte, window)
		}
		end, err := s.readBatches(buf, pos, first, upTo, l.gaps, -1)
		if errors.Is(err, ErrCorrupt) {
			damaged = s.base
		}
		switch {
		case err != nil || end == 0:
			if pooled {
				bufpool.Put(buf) // nothing returned refers to it
			}
			return nil, nil, damaged, err
		case !pooled:
			return buf[:end:end], nil, damaged, nil
		}
		e := &sharedRead{seg: s, offset: offset, pos: pos, read: len(buf), checked: end}
		e.ref = &e.held
		e.ref.Init(buf)
		ref = e.ref
		e.pin()
		l.shared.Swap(e).unpin()
		return buf[:end], ref, damaged, nil // the capacity tells bufpool.Put its class
	}
	return nil, nil, damaged, nil
}

// readSharedLocked answers a read from the log's last shared read when it
// would read the same bytes or a prefix of them (see sharedRead); hit
// says it did. Callers hold mu.
func (l *Log) readSharedLocked(offset int64, maxBytes int, upTo int64, minOneBatch bool) (data []byte, ref *bufpool.Ref, damaged int64, hit bool, err error) {
	damaged = -1
	e := l.shared.Load()
	if e == nil || e.offset != offset || l.segments[l.segmentFor(offset)] != e.seg {
		return nil, nil, damaged, false, nil
	}
	if !e.ref.Retain() {
		return nil, nil, damaged, false, nil // every answer holding it is written
	}
	buf := e.ref.Bytes()[:e.read]
	// The first batch parsed and passed its CRC when it was read.
	first, err := batch.ParseHeader(buf)
	if err != nil {
		e.ref.Release()
		return nil, nil, damaged, false, nil
	}
	if first.LastOffset() >= upTo {
		e.ref.Release()
		return nil, nil, damaged, true, nil
	}
	window, ok := e.seg.readWindow(e.pos, first, maxBytes, minOneBatch)
	if !ok {
		e.ref.Release()
		return nil, nil, damaged, true, nil
	}
	if window > int64(e.read) {
		e.ref.Release()
		return nil, nil, damaged, false, nil // more to read than it holds: read afresh
	}
	end, err := e.seg.readBatches(buf[:window], e.pos, first, upTo, l.gaps, e.checked)
	if errors.Is(err, ErrCorrupt) {
		damaged = e.seg.base
	}
	if err != nil || end == 0 {
		e.ref.Release()
		return nil, nil, damaged, true, err
	}
	// The read it was kept for has come; the answers hold the buffer
	// from here on (and a third read finds it while they do).
	e.unpin()
	return buf[:end], e.ref, damaged, true, nil
}

// noteDamage makes the next open re-validate the log from the segment at
// base, wherever the recovery point had got to, and whether or not this
// process stops cleanly: the recovery point goes down to base (durably)
// and stays there, and Close leaves out the clean-shutdown marker. The
// damage itself is left in place: cutting the log now could remove records
// this replica, perhaps the leader, has acknowledged; after a restart the
// broker is fenced first, so the cut happens while it leads nothing.
func (l *Log) noteDamage(base int64, cause error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	first := l.damagedFrom < 0
	if first || base < l.damagedFrom {
		l.damagedFrom = base
	}
	l.unlock()
	if first {
		l.logger.Error("corrupt batch in the log; it is not served, and the log is cut there at the next start so the replica copies the rest again",
			"dir", l.dir, "segment", base, "err", cause)
	}
	if base >= l.recoveryPoint {
		return
	}
	if err := writeOffsetCheckpoint(l.fs, l.dir, recoveryPointFile, base); err != nil {
		// The missing marker still forces recovery, from the old point.
		l.logger.Warn("recovery point not lowered to the damaged segment", "dir", l.dir, "segment", base, "err", err)
		return
	}
	l.recoveryPoint = base
}

// segmentFor returns the index of the segment holding offset (the last one
// whose base is <= offset). Callers hold mu.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset })
	return max(i-1, 0)
}

// readWindow is how many bytes a read of whole batches from pos, where
// first (already parsed) starts, reads with its one pread: at most
// maxBytes, or exactly the first batch when it alone is larger and
// minOneBatch is set; !ok when nothing fits.
func (s *segment) readWindow(pos int64, first batch.Header, maxBytes int, minOneBatch bool) (window int64, ok bool) {
	window = min(int64(min(max(maxBytes, 0), MaxReadBytes)), s.size-pos)
	if int64(first.Size()) > window {
		if !minOneBatch {
			return 0, false
		}
		window = int64(first.Size())
	}
	return window, true
}

// readBatches returns how many bytes from the start of buf, the segment's
// bytes from pos where first starts, are whole batches below upTo, each
// one's CRC checked. With checked < 0 it first fills buf with one pread;
// else buf already holds those bytes (a shared read), and the batches
// within its first checked bytes were checked when they were read.
func (s *segment) readBatches(buf []byte, pos int64, first batch.Header, upTo int64, gaps bool, checked int) (end int, err error) {
	if checked < 0 {
		if n, err := s.file.ReadAt(buf, pos); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
			return 0, fmt.Errorf("read %s at %d: %w", s.logPath(), pos, err)
		}
	}
	expected := first.BaseOffset
	for end < len(buf) {
		rest := buf[end:]
		if len(rest) < batch.HeaderSize {
			break
		}
		h, err := batch.ParseHeader(rest)
		if err != nil {
			return 0, fmt.Errorf("%w: %s at %d: %w", ErrCorrupt, s.logPath(), pos+int64(end), err)
		}
		if h.Size() > len(rest) || h.LastOffset() >= upTo {
			break
		}
		if !follows(expected, h.BaseOffset, gaps) {
			return 0, fmt.Errorf("%w: %s at %d: batch starts at offset %d, expected %d", ErrCorrupt, s.logPath(), pos+int64(end), h.BaseOffset, expected)
		}
		if end+h.Size() > checked {
			if _, err := batch.ValidateStored(rest[:h.Size()]); err != nil {
				return 0, fmt.Errorf("%w: %s at %d (offset %d): %w", ErrCorrupt, s.logPath(), pos+int64(end), h.BaseOffset, err)
			}
		}
		end += h.Size()
		expected = h.LastOffset() + 1
	}
	return end, nil
}

// OffsetForTimestamp finds the first batch whose max timestamp is >= ts
// (ListOffsets by time), through the segments' max timestamps, the time
// index, then a short scan. The base offset may lie below LogStartOffset
// when the log start is inside that batch; callers clamp.
func (l *Log) OffsetForTimestamp(ts int64) (baseOffsetOfBatch int64, batchMaxTimestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, fmt.Errorf("offset for timestamp in %s: %w", l.dir, ErrClosed)
	}
	var hr headerReader
	defer hr.release()
	for _, s := range l.segments {
		if s.maxTimestamp < ts || s.next <= l.logStart {
			continue
		}
		from := s.base
		if e, ok := s.timeIndex.lastBelow(ts); ok {
			// Every batch up to the one ending at e.rel is below ts.
			from = s.base + int64(e.rel) + 1
		}
		pos, h, found, err := s.findBatch(max(from, l.logStart), l.gaps)
		for found && pos < s.size {
			if h.MaxTimestamp >= ts {
				return h.BaseOffset, h.MaxTimestamp, true, nil
			}
			pos += int64(h.Size())
			if pos >= s.size {
				break
			}
			next := h.LastOffset() + 1
			if h, err = hr.header(s, pos); err == nil && !follows(next, h.BaseOffset, l.gaps) {
				err = fmt.Errorf("%w: %s: batch at %d starts at %d, expected %d", ErrCorrupt, s.logPath(), pos, h.BaseOffset, next)
			}
			if err != nil {
				break
			}
		}
		if err != nil {
			return 0, 0, false, fmt.Errorf("offset for timestamp %d in %s: %w", ts, l.dir, err)
		}
	}
	return 0, 0, false, nil
}

// MaxTimestamp returns the largest batch max timestamp in the log and the
// last offset of the batch holding it (ListOffsets -3), or (-1, -1) for an
// empty log.
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ts, offset = -1, -1
	for _, s := range l.segments {
		if s.maxTimestamp > ts && s.offsetOfMaxTime >= l.logStart {
			ts, offset = s.maxTimestamp, s.offsetOfMaxTime
		}
	}
	return ts, offset
}

// ScanHeaders calls fn with the header of every batch whose last offset is
// >= from, in order (rebuilding producer state at startup). fn must not
// call back into the Log: the log is read-locked meanwhile. A damaged
// header fails the scan with ErrCorrupt and is noted as a read's would be
// (see noteDamage): the log is cut there when it is next opened.
func (l *Log) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	return l.ScanBatches(from, func(h batch.Header, _ []byte) error { return fn(h) })
}

// ScanBatches is ScanHeaders that also hands fn the whole bytes of every
// control batch (transaction markers, whose outcome is in their record),
// CRC-checked; nil for other batches. The bytes are valid during the call
// only.
func (l *Log) ScanBatches(from int64, fn func(h batch.Header, control []byte) error) error {
	damaged, err := l.scanHeaders(from, fn)
	if damaged >= 0 {
		l.noteDamage(damaged, err)
	}
	return err
}

// scanHeaders does ScanBatches' work; damaged is the base of a segment
// found corrupt, or -1.
func (l *Log) scanHeaders(from int64, fn func(h batch.Header, control []byte) error) (damaged int64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	damaged = -1
	if l.closed {
		return damaged, fmt.Errorf("scan %s: %w", l.dir, ErrClosed)
	}
	for i := l.segmentFor(from); i < len(l.segments); i++ {
		s := l.segments[i]
		pos, _, found, err := s.findBatch(from, l.gaps)
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				damaged = s.base
			}
			return damaged, fmt.Errorf("scan %s from %d: %w", l.dir, from, err)
		}
		if !found {
			continue
		}
		sc := newScanner(s.file, pos, s.size, false)
		expected := int64(-1)
		for {
			h, at, _, err := sc.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err == nil && expected >= 0 && !follows(expected, h.BaseOffset, l.gaps) {
				err = fmt.Errorf("%w: batch at %d starts at %d, expected %d", ErrCorrupt, at, h.BaseOffset, expected)
			}
			if errors.Is(err, errTornTail) {
				// Inside the segment's known size a partial batch is damage:
				// a length field that lies.
				err = fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			if err != nil {
				if errors.Is(err, ErrCorrupt) {
					damaged = s.base
				}
				return damaged, fmt.Errorf("scan %s: %w", s.logPath(), err)
			}
			expected = h.LastOffset() + 1
			var control []byte
			if h.IsControl() {
				if control, err = sc.bytes(at, h.Size()); err == nil {
					_, err = batch.ValidateStored(control)
				}
				if err != nil {
					damaged = s.base
					return damaged, fmt.Errorf("%w: %s: control batch at %d: %w", ErrCorrupt, s.logPath(), at, err)
				}
			}
			if err := fn(h, control); err != nil {
				return damaged, err
			}
		}
	}
	return damaged, nil
}
