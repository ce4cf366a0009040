package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/skein-log/skein/internal/batch"
)

// maxZstdWindow rejects zstd frames that ask for a larger history window.
// Java clients compress at level 3 (a 2 MiB window at most); refusing huge
// declared windows stops a tiny hostile frame from costing gigabytes.
const maxZstdWindow = 32 << 20

// decompress returns the uncompressed records section of a batch, refusing
// to produce more than limit bytes.
func decompress(codec int, src []byte, limit int) ([]byte, error) {
	switch codec {
	case batch.CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w: %w", ErrCodec, err)
		}
		defer zr.Close()
		return readAllLimited("gzip", zr, limit, len(src))
	case batch.CompressionSnappy:
		return decodeSnappy(nil, src, limit)
	case batch.CompressionLZ4:
		return readAllLimited("lz4", lz4.NewReader(bytes.NewReader(src)), limit, len(src))
	case batch.CompressionZstd:
		// Concurrency 1 decodes synchronously: no goroutines to leak and
		// nothing to tune. A decoder per call keeps it simple; the broker
		// decompresses only for rare requests (ListOffsets by timestamp).
		zr, err := zstd.NewReader(bytes.NewReader(src),
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w: %w", ErrCodec, err)
		}
		defer zr.Close()
		return readAllLimited("zstd", zr, limit, len(src))
	default:
		return nil, fmt.Errorf("%w: codec %d", batch.ErrBadCompression, codec)
	}
}

// readAllLimited drains r, failing once more than limit bytes come out.
func readAllLimited(codec string, r io.Reader, limit, compressedLen int) ([]byte, error) {
	// Guess a typical ratio for the first allocation, never beyond limit.
	buf := bytes.NewBuffer(make([]byte, 0, min(limit, 4*compressedLen+512)))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", codec, ErrCodec, err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", codec, ErrTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// xerialMagic opens snappy data framed by the xerial snappy-java library,
// which the Java client uses. After the magic come two int32s (version and
// minimum compatible version), then chunks of [int32 length][snappy block].
// Other clients (librdkafka, sarama, franz-go) send one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

var errXerialFraming = errors.New("bad xerial framing")

// decodeSnappy decodes snappy records, raw or xerial-framed, into dst's
// capacity when it suffices (a pooled buffer), else a new buffer.
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return decodeSnappyBlock(dst, src, limit)
	}
	if len(src) < xerialHeaderSize {
		return nil, fmt.Errorf("snappy: %w: %w: %d byte header", ErrCodec, errXerialFraming, len(src))
	}
	chunks := src[xerialHeaderSize:]
	// First pass: check the framing and the total size before allocating.
	total := 0
	for rest := chunks; len(rest) > 0; {
		chunk, next, err := nextXerialChunk(rest)
		if err != nil {
			return nil, err
		}
		n, err := snappy.DecodedLen(chunk)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w: %w", ErrCodec, err)
		}
		if total += n; total > limit {
			return nil, fmt.Errorf("snappy: %w: more than %d bytes", ErrTooLarge, limit)
		}
		rest = next
	}
	out := dst[:0]
	if cap(out) < total {
		out = make([]byte, 0, total)
	}
	for rest := chunks; len(rest) > 0; {
		chunk, next, _ := nextXerialChunk(rest)
		dec, err := decodeSnappyBlock(out[len(out):], chunk, cap(out)-len(out))
		if err != nil {
			return nil, err
		}
		out = out[:len(out)+len(dec)]
		rest = next
	}
	return out, nil
}

// nextXerialChunk splits one length-prefixed chunk off the front of b.
func nextXerialChunk(b []byte) (chunk, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("snappy: %w: %w: %d trailing bytes", ErrCodec, errXerialFraming, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, fmt.Errorf("snappy: %w: %w: chunk of %d bytes, %d left", ErrCodec, errXerialFraming, n, len(b))
	}
	return b[:n], b[n:], nil
}

// decodeSnappyBlock decodes one raw snappy block into dst's spare capacity
// (or a new buffer), refusing blocks that announce more than limit bytes.
func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w: %w", ErrCodec, err)
	}
	if n > limit {
		return nil, fmt.Errorf("snappy: %w: block of %d bytes, limit %d", ErrTooLarge, n, limit)
	}
	out, err := snappy.Decode(dst[:0:cap(dst)], src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w: %w", ErrCodec, err)
	}
	return out, nil
}
