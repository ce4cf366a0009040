package storage

import (
	"errors"
	"fmt"
	"io"
)

// The zero-filled write-ahead window of the active segment.
//
// An append that extends a file makes the fsync after it commit the new
// size and the new blocks to the filesystem's journal; an append that
// overwrites blocks that are already allocated and durable makes the
// fsync write the data alone. On ext4 the journal commits of the leader's
// and the followers' fsyncs, all at once on one filesystem, run one after
// another (docs/performance.md, "The lone record's path"). So after a
// Sync that covered few bytes (lone records, whose latency is the fsync),
// the log writes zeros after its end, up to zeroWindowBytes ahead; the
// next fsync makes them durable (it has a size change to commit anyway),
// and the appends after it overwrite allocated blocks. Bulk appends never
// refill the window: their fsyncs are few per byte, and zeroing would
// double their page-cache copies.
//
// The format at rest does not change. The window lies past segment.size,
// where no reader looks; a roll and a close cut it off (a close before it
// leaves the clean-shutdown marker, so a clean open only ever trusts a
// file that ends at its last batch), as does every truncation. After a
// crash the window is what recovery's scan finds after the last whole
// batch: a zero header has magic 0, so the scan stops there, and
// recoverSegment cuts the file at the last whole batch as it does a torn
// tail. Nothing else reads file sizes of an open log's active segment:
// Size, retention, moves and log-dir descriptions use segment.size.
const (
	// zeroWindowBytes is how far ahead of the log end the window reaches
	// after a refill: about 1,500 lone 100-byte records, so one fsync in
	// that many carries the zeros (and a size change).
	zeroWindowBytes = 256 << 10
	// zeroRefillBelow: the window is refilled when less than this is left.
	zeroRefillBelow = zeroWindowBytes / 2
	// zeroSmallSync: a Sync that covered at most this many appended bytes
	// counts as small, which is when the window is refilled.
	zeroSmallSync = 32 << 10
)

// zeroes is the source of the window's writes (never written to).
var zeroes [zeroWindowBytes]byte

// refillZeroTailLocked extends the active segment's window after a Sync
// that covered covered bytes of appends. The zeros are written to the page
// cache only; whichever fsync comes next makes them durable. A failed
// write costs only the window: the file is cut back to the log end.
// Callers hold mu exclusively.
func (l *Log) refillZeroTailLocked(covered int64) {
	if covered <= 0 || covered > zeroSmallSync || l.closed || l.failed != nil {
		return
	}
	s := l.active()
	from := max(s.zeroEnd, s.size)
	if from-s.size >= zeroRefillBelow {
		return
	}
	// Within segment.bytes: the segment rolls there and would cut the
	// rest off.
	to := min(s.size+zeroWindowBytes, l.cfg.SegmentBytes)
	if to <= from {
		return
	}
	if l.mayFillAhead != nil && !l.mayFillAhead(to-from) {
		return
	}
	if _, err := s.file.WriteAt(zeroes[:to-from], from); err != nil {
		s.zeroEnd = to // the file may hold part of it: trimZeroTail cuts whatever is there
		if terr := s.trimZeroTail(); terr != nil {
			l.logger.Warn("zero-filled window not written nor cut; a roll or close cuts it", "dir", l.dir, "segment", s.base, "err", err, "cut_err", terr)
		}
		l.logger.Debug("zero-filled window not written", "dir", l.dir, "segment", s.base, "err", err)
		return
	}
	s.zeroEnd = to
}

// trimZeroTail cuts the window off the segment file, leaving it at its
// last batch. The cut is durable after the file's next fsync (the active
// segment's: Sync then does not skip it, see segment.trims; a rolled one's:
// Sync fsyncs rolled segments before it moves the recovery point past
// them).
func (s *segment) trimZeroTail() error {
	if s.zeroEnd <= s.size {
		s.zeroEnd = 0
		return nil
	}
	if err := s.file.Truncate(s.size); err != nil {
		return fmt.Errorf("cut the zero-filled window of %s at %d: %w", s.logPath(), s.size, err)
	}
	s.zeroEnd = 0
	s.trims++
	return nil
}

// zeroTail reports whether the bytes of s's file in [from, end) are all
// zero: a write-ahead window that a crash left, which recovery cuts
// without calling it damage.
func zeroTail(s *segment, from, end int64) (bool, error) {
	buf := make([]byte, min(end-from, headerScanChunk))
	for pos := from; pos < end; {
		n := int(min(int64(len(buf)), end-pos))
		got, err := s.file.ReadAt(buf[:n], pos)
		if err != nil && !(errors.Is(err, io.EOF) && got == n) {
			return false, fmt.Errorf("read %s at %d: %w", s.logPath(), pos, err)
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		pos += int64(n)
	}
	return true, nil
}
