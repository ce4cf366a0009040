// Package bufpool pools byte buffers of 64 KiB and more by power-of-two
// size class: request frames, fetch answers, the log reads that fill
// them. A buffer has one owner at a time; whoever gives it back with Put
// must be sure nothing refers to its bytes any more. Pooled buffers that
// stay unused are freed by the GC, as sync.Pool does.
package bufpool

import (
	"math/bits"
	"sync"
)

const (
	minShift = 16 // 64 KiB: smaller buffers are allocated and dropped
	maxShift = 27 // 128 MiB: so are larger ones
)

// Min is the smallest buffer Get takes from the pool.
const Min = 1 << minShift

var pools [maxShift - minShift + 1]sync.Pool

// Get returns a buffer of length n: pooled, of its size class's capacity,
// when n is in the pooled range; else freshly allocated.
func Get(n int) []byte {
	class := bits.Len(uint(n - 1))
	if n < Min || class > maxShift {
		return make([]byte, n)
	}
	if b, ok := pools[class-minShift].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<class)
}

// Put pools b, in the largest class its capacity fills (so that a Get
// never returns a buffer smaller than its class), if it is in the pooled
// range. Nothing may use b afterwards.
func Put(b []byte) {
	if cap(b) < Min {
		return
	}
	if class := bits.Len(uint(cap(b))) - 1; class <= maxShift {
		b = b[:0]
		pools[class-minShift].Put(&b)
	}
}
