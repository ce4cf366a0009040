package wire

import (
	"bytes"
	"fmt"
	"testing"
)

// ReadFrameBodyPooled reads the same bytes as ReadFrameBodyCharged,
// charges the same amounts, and a released frame's buffer, reused by the
// next read, holds that read's bytes only.
func TestReadFrameBodyPooled(t *testing.T) {
	for _, size := range []int{minRequestBytes, frameChunkBytes - 1, frameChunkBytes, frameChunkBytes + 1, 100 << 10, 1 << 20, 1<<20 + 64, 3<<20 + 7} {
		for round := range 3 { // fresh, then (probably) pooled buffers
			body := bytes.Repeat([]byte{byte(round + 1), byte(size)}, size/2+1)[:size]
			var charged, chargedPlain int
			got, err := ReadFrameBodyPooled(bytes.NewReader(body), int32(size), func(n int) error { charged += n; return nil })
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReadFrameBodyCharged(bytes.NewReader(body), int32(size), func(n int) error { chargedPlain += n; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || charged != chargedPlain {
				t.Fatalf("size %d round %d: read differently (charged %d, plain %d)", size, round, charged, chargedPlain)
			}
			ReleaseFrame(got)
		}
	}
}

// TestReadGrowingChunks: below half the frame, each buffer readGrowingWith
// takes is at most a chunk more than what arrived before it, they sum to
// half the frame, and the frame's own buffer comes last; charge is called
// for size in all. So a frame copies half its bytes, and holds what
// doubling one buffer held.
func TestReadGrowingChunks(t *testing.T) {
	for _, size := range []int{frameChunkBytes + 1, 100 << 10, 1 << 20, 1<<20 + 64, 3<<20 + 7, 64 << 20} {
		var gets []int
		charged := 0
		body := bytes.Repeat([]byte{7, 9, 11}, size/3+1)[:size]
		got, err := readGrowingWith(bytes.NewReader(body), size, func(n int) error { charged += n; return nil },
			func(n int) []byte { gets = append(gets, n); return make([]byte, n) }, func([]byte) {})
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("size %d: %v, or the frame differs", size, err)
		}
		if charged != size || gets[len(gets)-1] != size {
			t.Fatalf("size %d: charged %d, last buffer %d", size, charged, gets[len(gets)-1])
		}
		received := 0
		for i, n := range gets[:len(gets)-1] {
			if n > received+frameChunkBytes {
				t.Fatalf("size %d: buffer %d of %d bytes after %d received", size, i, n, received)
			}
			received += n
		}
		if received != (size+1)/2 {
			t.Fatalf("size %d: %d bytes in chunks (copied), want half", size, received)
		}
	}
}

// BenchmarkReadFrame reads a 1 MiB request frame (a producer's batch),
// and one just past it (the batch with its request's header), the two
// ways: "fresh" allocates as it grows, "pooled" (what node's reader uses)
// takes its buffers from the pool and gives the frame back.
//
//	go test -run '^$' -bench ReadFrame -benchmem -count 6 ./internal/wire/
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 20, 1<<20 + 64} {
		body := bytes.Repeat([]byte{42}, size)
		for _, pooled := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%d/pooled=%v", size, pooled), func(b *testing.B) {
				r := bytes.NewReader(body)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					r.Reset(body)
					if pooled {
						f, err := ReadFrameBodyPooled(r, int32(size), nil)
						if err != nil {
							b.Fatal(err)
						}
						ReleaseFrame(f)
						continue
					}
					if _, err := ReadFrameBodyCharged(r, int32(size), nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
