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
	for _, size := range []int{minRequestBytes, frameChunkBytes - 1, frameChunkBytes, frameChunkBytes + 1, 1 << 20, 3<<20 + 7} {
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

// BenchmarkReadFrame reads a 1 MiB request frame (a producer's batch) the
// two ways: "fresh" allocates as it grows, "pooled" (what node's reader
// uses) takes its buffers from the pool and gives the frame back.
//
//	go test -run '^$' -bench ReadFrame -benchmem -count 6 ./internal/wire/
func BenchmarkReadFrame(b *testing.B) {
	const size = 1 << 20
	body := bytes.Repeat([]byte{42}, size)
	for _, pooled := range []bool{false, true} {
		b.Run(fmt.Sprintf("pooled=%v", pooled), func(b *testing.B) {
			r := bytes.NewReader(body)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(body)
				if pooled {
					f, err := ReadFrameBodyPooled(r, size, nil)
					if err != nil {
						b.Fatal(err)
					}
					ReleaseFrame(f)
					continue
				}
				if _, err := ReadFrameBodyCharged(r, size, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
