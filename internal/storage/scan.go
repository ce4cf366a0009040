package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// Scan window sizes: one read brings in many small batches at once.
const (
	headerScanChunk = 64 << 10
	fullScanChunk   = 1 << 20
)

// errTornTail reports a partial batch at the end of a file: the classic
// result of a crash in the middle of a write.
var errTornTail = errors.New("partial batch at end of segment")

// scanner walks the batches of one segment file sequentially through a read
// window. In full mode it reads and CRC-checks every batch; otherwise it
// reads just enough to parse each header and trusts the lengths.
type scanner struct {
	file    vfs.File
	pos     int64 // position of the next batch
	end     int64 // stop here
	full    bool
	window  []byte
	winFrom int64 // file position of window[0]
}

func newScanner(file vfs.File, from, end int64, full bool) *scanner {
	return &scanner{file: file, pos: from, end: end, full: full}
}

// bytes returns file bytes [at, at+n), reading a new window if needed. The
// slice is valid until the next call.
func (s *scanner) bytes(at int64, n int) ([]byte, error) {
	if at >= s.winFrom && at+int64(n) <= s.winFrom+int64(len(s.window)) {
		off := at - s.winFrom
		return s.window[off : off+int64(n)], nil
	}
	chunk := headerScanChunk
	if s.full {
		chunk = fullScanChunk
	}
	size := int64(max(n, chunk))
	size = min(size, s.end-at)
	if size < int64(n) {
		return nil, errTornTail
	}
	if int64(cap(s.window)) < size {
		s.window = make([]byte, size)
	}
	s.window = s.window[:size]
	got, err := s.file.ReadAt(s.window, at)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == size) {
		return nil, fmt.Errorf("read %s at %d: %w", s.file.Name(), at, err)
	}
	s.winFrom = at
	return s.window[:n], nil
}

// next returns the batch at the scanner position and advances. It returns
// io.EOF exactly at the end, errTornTail for a partial trailing batch, and an
// error wrapping ErrCorrupt for a batch that fails a check. data is only
// set in full mode and is valid until the next call.
func (s *scanner) next() (h batch.Header, pos int64, data []byte, err error) {
	pos = s.pos
	if pos >= s.end {
		return h, pos, nil, io.EOF
	}
	head, err := s.bytes(pos, batch.HeaderSize)
	if err != nil {
		return h, pos, nil, err
	}
	h, err = batch.ParseHeader(head)
	if err != nil {
		return h, pos, nil, fmt.Errorf("%w: batch header at position %d: %w", ErrCorrupt, pos, err)
	}
	if h.LastOffsetDelta < 0 || h.BaseOffset < 0 {
		return h, pos, nil, fmt.Errorf("%w: batch at position %d has offsets %d+%d", ErrCorrupt, pos, h.BaseOffset, h.LastOffsetDelta)
	}
	size := int64(h.Size())
	if size > s.end-pos {
		return h, pos, nil, errTornTail
	}
	if s.full {
		data, err = s.bytes(pos, int(size))
		if err != nil {
			return h, pos, nil, err
		}
		if _, err := batch.ValidateStored(data); err != nil {
			return h, pos, nil, fmt.Errorf("%w: batch at position %d: %w", ErrCorrupt, pos, err)
		}
	}
	s.pos = pos + size
	return h, pos, data, nil
}
