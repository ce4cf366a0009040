package wire

import (
	"math/bits"
	"sync"
)

// Buffers of 64 KiB and more are pooled by power-of-two size class: large
// fetch responses (ResponseBuffer) and large request frames
// (ReadFrameBodyPooled). Pooled buffers that stay unused are freed by the
// GC, as sync.Pool does.
const (
	minPoolShift = 16 // 64 KiB: smaller buffers are allocated and dropped
	maxPoolShift = 27 // 128 MiB: so are larger ones
)

var bufferPools [maxPoolShift - minPoolShift + 1]sync.Pool

// getBuffer returns a buffer of length n: pooled, of its size class's
// capacity, when n is in the pooled range; else freshly allocated.
func getBuffer(n int) []byte {
	class := bits.Len(uint(n - 1))
	if n < 1<<minPoolShift || class > maxPoolShift {
		return make([]byte, n)
	}
	if b, ok := bufferPools[class-minPoolShift].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<class)
}

// putBuffer pools b, in the largest class its capacity fills (so that a
// Get never returns a buffer smaller than its class), if it is in the
// pooled range. Nothing may use b afterwards.
func putBuffer(b []byte) {
	if cap(b) < 1<<minPoolShift {
		return
	}
	if class := bits.Len(uint(cap(b))) - 1; class <= maxPoolShift {
		b = b[:0]
		bufferPools[class-minPoolShift].Put(&b)
	}
}
