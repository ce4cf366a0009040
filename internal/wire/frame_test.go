package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"
)

// sizePrefixed returns body behind a 4-byte big-endian size equal to its
// length.
func sizePrefixed(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// prefixOnly is a 4-byte size prefix announcing size bytes, with no body.
func prefixOnly(size uint32) []byte { return binary.BigEndian.AppendUint32(nil, size) }

func TestReadFrame(t *testing.T) {
	minimal := bytes.Repeat([]byte{7}, minRequestBytes)
	large := bytes.Repeat([]byte("0123456789abcdef"), 3*frameChunkBytes/16+5) // spans several growth steps
	tests := []struct {
		name     string
		input    []byte
		maxBytes int32
		want     []byte
		wantErr  error
	}{
		{"minimal frame", sizePrefixed(minimal), 100, minimal, nil},
		{"frame of exactly maxBytes", sizePrefixed(bytes.Repeat([]byte{1}, 64)), 64, bytes.Repeat([]byte{1}, 64), nil},
		{"frame larger than one chunk", sizePrefixed(large), DefaultMaxFrameBytes, large, nil},
		{"clean end of stream", nil, 100, nil, io.EOF},
		{"end of stream inside the prefix", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
		{"end of stream inside the body", append(prefixOnly(20), 1, 2, 3), 100, nil, io.ErrUnexpectedEOF},
		{"end of stream inside a large body", append(prefixOnly(uint32(len(large))), large[:frameChunkBytes+3]...), DefaultMaxFrameBytes, nil, io.ErrUnexpectedEOF},
		{"size zero", prefixOnly(0), 100, nil, ErrFrameInvalid},
		{"size below a request header", prefixOnly(minRequestBytes - 1), 100, nil, ErrFrameInvalid},
		{"negative size", prefixOnly(0xFFFFFFFF), 100, nil, ErrFrameInvalid},
		{"size 2 GiB reads as negative", prefixOnly(1 << 31), math.MaxInt32, nil, ErrFrameInvalid},
		{"size 2 GiB - 1 over the limit", prefixOnly(math.MaxInt32), DefaultMaxFrameBytes, nil, ErrFrameTooLarge},
		{"one byte over the limit", sizePrefixed(bytes.Repeat([]byte{1}, 65)), 64, nil, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader proves the reader copes with short reads.
			got, err := ReadFrame(iotest.OneByteReader(bytes.NewReader(tt.input)), tt.maxBytes)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("frame = %d bytes, want %d", len(got), len(tt.want))
			}
			if got != nil && cap(got) != len(got) {
				t.Errorf("frame has cap %d for %d bytes: the caller would pin slack", cap(got), len(got))
			}
		})
	}
}

// TestReadFrameConsecutive reads frames back to back from one stream: no
// byte of the next frame may be consumed by the previous one.
func TestReadFrameConsecutive(t *testing.T) {
	var stream []byte
	var want [][]byte
	for i, n := range []int{minRequestBytes, 1000, frameChunkBytes + 1, 2 * frameChunkBytes, 11} {
		body := bytes.Repeat([]byte{byte(i + 1)}, n)
		want = append(want, body)
		stream = append(stream, sizePrefixed(body)...)
	}
	r := iotest.HalfReader(bytes.NewReader(stream))
	for i, w := range want {
		got, err := ReadFrame(r, DefaultMaxFrameBytes)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(w))
		}
	}
	if _, err := ReadFrame(r, DefaultMaxFrameBytes); !errors.Is(err, io.EOF) {
		t.Fatalf("after last frame: err = %v, want io.EOF", err)
	}
}

// bytesAllocatedPerRun is testing.AllocsPerRun for bytes: the mean heap
// bytes allocated by one call of f.
func bytesAllocatedPerRun(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f() // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestReadFrameHostilePrefixAllocatesLittle proves that the announced size
// is never trusted for allocation: a rejected prefix costs (almost)
// nothing, and an accepted huge prefix followed by a few bytes costs one
// chunk, not the announced size.
func TestReadFrameHostilePrefixAllocatesLittle(t *testing.T) {
	tests := []struct {
		name     string
		input    []byte
		maxBytes int32
		limit    uint64
	}{
		{"2 GiB - 1 over a 100 MiB limit", prefixOnly(math.MaxInt32), DefaultMaxFrameBytes, 512},
		{"2 GiB (negative)", prefixOnly(1 << 31), math.MaxInt32, 512},
		{"2 GiB - 1 accepted, only 10 bytes sent", append(prefixOnly(math.MaxInt32), make([]byte, 10)...), math.MaxInt32, frameChunkBytes + 1024},
		{"100 MiB accepted, only 10 bytes sent", append(prefixOnly(DefaultMaxFrameBytes), make([]byte, 10)...), DefaultMaxFrameBytes, frameChunkBytes + 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(tt.input)
			perRun := bytesAllocatedPerRun(20, func() {
				r.Reset(tt.input)
				if _, err := ReadFrame(r, tt.maxBytes); err == nil {
					t.Fatal("hostile frame accepted")
				}
			})
			if perRun > tt.limit {
				t.Fatalf("ReadFrame allocated %d bytes per call, want <= %d", perRun, tt.limit)
			}
		})
	}
}

// TestReadFrameMemoryFollowsArrivedBytes checks that a partially sent large
// frame holds memory proportional to what arrived (at most twice it plus a
// chunk), not to the announced size.
func TestReadFrameMemoryFollowsArrivedBytes(t *testing.T) {
	const announced = 64 << 20
	const sent = 1 << 20
	input := append(prefixOnly(announced), make([]byte, sent)...)
	r := bytes.NewReader(input)
	perRun := bytesAllocatedPerRun(3, func() {
		r.Reset(input)
		if _, err := ReadFrame(r, DefaultMaxFrameBytes); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
		}
	})
	// Growth doubles from one chunk: the buffers allocated sum to less
	// than 4× the bytes received.
	if perRun > 4*sent+frameChunkBytes {
		t.Fatalf("allocated %d bytes for %d received of %d announced", perRun, sent, announced)
	}
}

// FuzzReadFrame: any byte stream and limit either yields a frame that is
// exactly the announced bytes within the limit, or an error; never a panic
// or a frame over the limit.
func FuzzReadFrame(f *testing.F) {
	f.Add(sizePrefixed(bytes.Repeat([]byte{0}, minRequestBytes)), int32(100))
	f.Add(sizePrefixed(bytes.Repeat([]byte{1}, 300)), int32(200))
	f.Add(prefixOnly(math.MaxInt32), int32(DefaultMaxFrameBytes))
	f.Add(prefixOnly(1<<31), int32(math.MaxInt32))
	f.Add(prefixOnly(0xFFFFFFFF), int32(100))
	f.Add([]byte{0, 0}, int32(100))
	f.Add(append(prefixOnly(40), 1, 2, 3), int32(100))
	f.Fuzz(func(t *testing.T, input []byte, maxBytes int32) {
		frame, err := ReadFrame(bytes.NewReader(input), maxBytes)
		if err != nil {
			if frame != nil {
				t.Fatalf("error %v with a non-nil frame", err)
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(input))
		if size < minRequestBytes || size > maxBytes {
			t.Fatalf("accepted a %d-byte frame with limit %d", size, maxBytes)
		}
		if !bytes.Equal(frame, input[4:4+int(size)]) {
			t.Fatalf("frame differs from the input bytes")
		}
	})
}
