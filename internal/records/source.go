package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// source is the uncompressed records section of one batch, read once from
// front to back: either a slice that holds all of it (an uncompressed
// batch, a decoded snappy block), or a decompressor read through a small
// window, so that checking a compressed batch never holds its whole
// uncompressed form. Every read checks bounds; none allocates.
type source struct {
	buf []byte // unread bytes are buf[pos:]
	pos int
	// r refills buf from window once it is drained; nil when buf is all
	// there is.
	r      io.Reader
	window []byte
	// before counts the bytes that came before buf[0].
	before int64
	// limit caps the uncompressed size; only streamed sources can pass it.
	limit int64
	err   error // the refill error that ended the stream
}

// errTruncated: the records section ended inside a record.
var errTruncated = fmt.Errorf("%w: records end early", ErrCorrupt)

func sliceSource(b []byte) source { return source{buf: b, limit: int64(len(b))} }

// offset is how many bytes were read so far.
func (s *source) offset() int64 { return s.before + int64(s.pos) }

// streaming reports whether the source refills from a decompressor.
func (s *source) streaming() bool { return s.r != nil }

// fill replaces the drained window with the next bytes of the stream.
func (s *source) fill() bool {
	if s.r == nil || s.err != nil {
		return false
	}
	s.before += int64(len(s.buf))
	s.buf, s.pos = s.window[:0], 0
	for len(s.buf) == 0 {
		n, err := s.r.Read(s.window)
		s.buf = s.window[:n]
		if s.before+int64(n) > s.limit {
			s.buf, s.err = s.buf[:0], fmt.Errorf("%w: more than %d bytes", ErrTooLarge, s.limit)
			return false
		}
		if err != nil {
			s.err = err
			return n > 0
		}
	}
	return true
}

// end is the error of a read past the end: the stream's own failure, or
// errTruncated when the data simply stopped.
func (s *source) end() error {
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		if errors.Is(s.err, ErrTooLarge) {
			return s.err
		}
		return fmt.Errorf("%w: %w", ErrCodec, s.err)
	}
	return errTruncated
}

// atEnd reports whether every byte was read; a failing stream is an error.
func (s *source) atEnd() (bool, error) {
	if s.pos < len(s.buf) || s.fill() {
		return false, nil
	}
	if err := s.end(); !errors.Is(err, errTruncated) {
		return false, err
	}
	return true, nil
}

func (s *source) byte() (byte, error) {
	if s.pos == len(s.buf) && !s.fill() {
		return 0, s.end()
	}
	b := s.buf[s.pos]
	s.pos++
	return b, nil
}

// varlong reads a zigzag varint of at most 10 bytes.
func (s *source) varlong() (int64, error) {
	// Most fields of a record (attributes aside) are one-byte varints:
	// small deltas, short keys, few headers.
	if s.pos < len(s.buf) {
		if b := s.buf[s.pos]; b < 0x80 {
			s.pos++
			return int64(b>>1) ^ -int64(b&1), nil
		}
	}
	if rest := s.buf[s.pos:]; len(rest) >= binary.MaxVarintLen64 || s.r == nil {
		v, n := binary.Varint(rest)
		switch {
		case n > 0:
			s.pos += n
			return v, nil
		case n == 0:
			return 0, errTruncated
		default:
			return 0, fmt.Errorf("%w: varint overflows 64 bits", ErrCorrupt)
		}
	}
	// Near the end of a window: a byte at a time, across refills.
	var ux uint64
	for i := range binary.MaxVarintLen64 {
		b, err := s.byte()
		if err != nil {
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			ux |= uint64(b) << (7 * i)
			x := int64(ux >> 1)
			if ux&1 != 0 {
				x = ^x
			}
			return x, nil
		}
		ux |= uint64(b&0x7f) << (7 * i)
	}
	return 0, fmt.Errorf("%w: varint overflows 64 bits", ErrCorrupt)
}

// varint reads a zigzag varint that must fit an int32.
func (s *source) varint() (int32, error) {
	v, err := s.varlong()
	if err != nil {
		return 0, err
	}
	if v < -1<<31 || v > 1<<31-1 {
		return 0, fmt.Errorf("%w: varint %d overflows int32", ErrCorrupt, v)
	}
	return int32(v), nil
}

// take returns the next n bytes, aliasing the input. Only slice sources
// can: a streamed window is overwritten by the next refill.
func (s *source) take(n int) ([]byte, error) {
	if s.r != nil {
		panic("records: take on a streamed source")
	}
	if n > len(s.buf)-s.pos {
		return nil, errTruncated
	}
	v := s.buf[s.pos : s.pos+n : s.pos+n]
	s.pos += n
	return v, nil
}

// skip discards the next n bytes.
func (s *source) skip(n int64) error {
	for {
		if left := int64(len(s.buf) - s.pos); n <= left {
			s.pos += int(n)
			return nil
		} else {
			n -= left
			s.pos = len(s.buf)
		}
		if !s.fill() {
			return s.end()
		}
	}
}
