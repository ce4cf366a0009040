// Package wire reads and writes Kafka protocol frames: the 4-byte size
// prefix, request and response headers, and the request body decoded with
// franz-go's kmsg (generated from Kafka's own message definitions).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/skein-log/skein/internal/bufpool"
)

// DefaultMaxFrameBytes is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxFrameBytes = 100 << 20

// ErrFrameTooLarge means a size prefix exceeded the configured maximum. The
// connection must be closed: the rest of the stream cannot be trusted.
var ErrFrameTooLarge = errors.New("frame exceeds socket.request.max.bytes")

// ErrFrameInvalid means a size prefix was negative or too small to hold a
// request header.
var ErrFrameInvalid = errors.New("invalid frame size")

// minRequestBytes is the smallest possible request: key, version,
// correlation id and a null client id.
const minRequestBytes = 2 + 2 + 4 + 2

// frameChunkBytes is how much of a frame is allocated before any of its
// body has arrived. Frames up to this size (almost every request) cost one
// allocation of exactly their size; larger ones grow as bytes arrive.
const frameChunkBytes = 64 << 10

// ReadFrame reads one size-prefixed frame. The size is checked against
// maxBytes before anything is allocated, and the buffer then grows only as
// body bytes actually arrive (at most doubling what was received). So a peer
// that announces a maximum-size frame and sends a few bytes holds
// frameChunkBytes of memory, not maxBytes: without that, max.connections
// idle peers could pin max.connections × socket.request.max.bytes.
// The returned slice is freshly allocated, exactly size bytes long, and
// owned by the caller.
func ReadFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	size, err := ReadFrameSize(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, size)
}

// ReadFrameSize reads a frame's 4-byte size prefix and checks it, so a
// caller can account for the frame (queued.max.request.bytes) before
// reading its body with ReadFrameBody.
func ReadFrameSize(r io.Reader, maxBytes int32) (int32, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return 0, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < minRequestBytes {
		return 0, fmt.Errorf("%w: %d bytes", ErrFrameInvalid, size)
	}
	if size > maxBytes {
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, maxBytes)
	}
	return size, nil
}

// ReadFrameBody reads the size bytes of a frame whose prefix
// ReadFrameSize returned.
func ReadFrameBody(r io.Reader, size int32) ([]byte, error) {
	return ReadFrameBodyCharged(r, size, nil)
}

// ReadFrameBodyCharged is ReadFrameBody calling charge (if not nil) with
// the bytes its buffer is about to grow by, before each allocation, so a
// broker-wide budget follows the memory that arrived frames really hold.
// An error from charge ends the read with that error.
func ReadFrameBodyCharged(r io.Reader, size int32, charge func(n int) error) ([]byte, error) {
	buf, err := readGrowing(r, int(size), charge)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %d-byte frame: %w", size, err)
	}
	return buf, nil
}

// ReadFrameBodyPooled is ReadFrameBodyCharged with every buffer of 64 KiB
// or more (the frame's, and those it grows through) taken from the buffer
// pool: a 1 MiB produce request allocated 2 MiB before. Give the frame
// back with ReleaseFrame once nothing refers to its bytes any more.
func ReadFrameBodyPooled(r io.Reader, size int32, charge func(n int) error) ([]byte, error) {
	buf, err := readGrowingWith(r, int(size), charge, bufpool.Get, bufpool.Put)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %d-byte frame: %w", size, err)
	}
	return buf, nil
}

// FrameBuffer is a buffer of length n from the buffer pool, for a frame
// whose size is trusted (an answer from another node of the cluster, with
// a bounded size); give it back with ReleaseFrame.
func FrameBuffer(n int) []byte { return bufpool.Get(n) }

// ReleaseFrame gives a frame of ReadFrameBodyPooled or FrameBuffer back
// to the pool.
// Nothing may use its bytes afterwards.
func ReleaseFrame(frame []byte) { bufpool.Put(frame) }

// readGrowing reads exactly size bytes into buffers that grow as the bytes
// arrive (readGrowingWith), so memory follows the bytes received rather
// than the size the peer announced.
func readGrowing(r io.Reader, size int, charge func(n int) error) ([]byte, error) {
	return readGrowingWith(r, size, charge, func(n int) []byte { return make([]byte, n) }, func([]byte) {})
}

// maxFrameChunks bounds the chunks readGrowingWith reads into: the first
// is frameChunkBytes, each next one doubles what arrived, and they stop
// at half a frame of at most 2 GiB.
const maxFrameChunks = 32

// readGrowingWith reads a frame of size bytes with its buffers from get,
// and those outgrown handed to put. A frame of up to frameChunkBytes is
// read into one buffer of its size. A larger one is read into chunks
// until half of it has arrived: the first frameChunkBytes, each next one
// as large as all before it, the last one ending at half the frame (less
// than a chunk more than all before it). Then it takes the frame's
// buffer, copies the chunks into it and reads the rest in place. So what
// is held is what doubling one buffer held (at most twice the bytes
// received plus a chunk, three times while the frame's buffer is taken),
// charge is called for the same total (size), and half the frame is
// copied; doubling one buffer copied all of it but the last part, and
// nearly twice the frame when its size was just past a power of two (a
// 1 MiB producer batch with its request's header).
func readGrowingWith(r io.Reader, size int, charge func(n int) error, get func(int) []byte, put func([]byte)) ([]byte, error) {
	if size <= frameChunkBytes {
		if charge != nil {
			if err := charge(size); err != nil {
				return nil, err
			}
		}
		buf := get(size)
		if _, err := io.ReadFull(r, buf); err != nil {
			put(buf)
			return nil, err
		}
		return buf, nil
	}
	var held [maxFrameChunks][]byte
	chunks := held[:0]
	release := func(chunks [][]byte) {
		for _, c := range chunks {
			put(c)
		}
	}
	half, received := (size+1)/2, 0
	for received < half {
		n := frameChunkBytes
		if received > 0 {
			n = received
		}
		if half-received-n < frameChunkBytes {
			n = half - received // the last chunk takes the rest, not a sliver after it
		}
		if charge != nil {
			if err := charge(n); err != nil {
				release(chunks)
				return nil, err
			}
		}
		c := get(n)
		chunks = append(chunks, c)
		if _, err := io.ReadFull(r, c); err != nil {
			release(chunks)
			return nil, err
		}
		received += n
	}
	if charge != nil {
		if err := charge(size - received); err != nil {
			release(chunks)
			return nil, err
		}
	}
	buf := get(size)
	at := 0
	for _, c := range chunks {
		at += copy(buf[at:], c)
	}
	release(chunks)
	if _, err := io.ReadFull(r, buf[at:]); err != nil {
		put(buf)
		return nil, err
	}
	return buf, nil
}
