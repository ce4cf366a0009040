// Package bufpool pools byte buffers of 64 KiB and more by size class:
// request frames, fetch answers, the log reads that fill them. A buffer
// has one owner at a time; whoever gives it back with Put must be sure
// nothing refers to its bytes any more. A buffer several owners share (a
// log read answered to more than one fetch) is held through a Ref, whose
// last Release puts it back. Pooled buffers that stay unused are freed by
// the GC, as sync.Pool does.
//
// Each power of two is split into four classes (2^s, 1.25·2^s, 1.5·2^s,
// 1.75·2^s), so a buffer is at most 25% larger than asked. Power-of-two
// classes alone would let a fetch answer's buffer be nearly twice what
// fetch.response.max.inflight.bytes charged for it.
package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/skein-log/skein/internal/invariant"
)

const (
	minShift = 16 // 64 KiB: smaller buffers are allocated and dropped
	maxShift = 27 // 128 MiB: so are larger ones

	perDoubling = 4
	classes     = (maxShift-minShift)*perDoubling + 1
)

// Min is the smallest buffer Get takes from the pool.
const Min = 1 << minShift

// Max is the largest.
const Max = 1 << maxShift

// pools hold *[]byte, not []byte: a slice stored in an interface is
// boxed on the heap at every Put. The boxes themselves are recycled
// through boxes (Get empties the one it took, Put fills one), so a warm
// Get and Put allocate nothing; the lone-record path puts a buffer back
// several times per record.
var (
	pools [classes]sync.Pool
	boxes sync.Pool
)

// size is class i's capacity.
func size(i int) int {
	s := minShift + i/perDoubling
	return (perDoubling + i%perDoubling) << (s - 2)
}

// ceilClass is the smallest class holding n bytes (Min <= n <= Max).
func ceilClass(n int) int {
	if n <= Min {
		return 0
	}
	s := bits.Len(uint(n-1)) - 1 // 2^s < n <= 2^(s+1)
	step := 1 << (s - 2)
	k := (n - 1<<s + step - 1) / step // 1..4
	return (s-minShift)*perDoubling + k
}

// floorClass is the largest class a capacity c (Min <= c) fills.
func floorClass(c int) int {
	s := bits.Len(uint(c)) - 1 // 2^s <= c < 2^(s+1)
	if s >= maxShift {
		return classes - 1
	}
	k := (c - 1<<s) >> (s - 2) // 0..3
	return (s-minShift)*perDoubling + k
}

// Get returns a buffer of length n: pooled, of its size class's capacity,
// when n is in the pooled range; else freshly allocated.
func Get(n int) []byte {
	if n < Min || n > Max {
		return make([]byte, n)
	}
	i := ceilClass(n)
	if p, ok := pools[i].Get().(*[]byte); ok {
		b := *p
		*p = nil // the box must not keep the buffer alive
		boxes.Put(p)
		return b[:n]
	}
	return make([]byte, n, size(i))
}

// Put pools b, in the largest class its capacity fills (so that a Get
// never returns a buffer smaller than its class), if it is in the pooled
// range. Nothing may use b afterwards.
func Put(b []byte) {
	if cap(b) < Min {
		return
	}
	if invariant.Panics {
		poison(b[:cap(b)])
	}
	i := floorClass(cap(b))
	p, ok := boxes.Get().(*[]byte)
	if !ok {
		p = new([]byte)
	}
	*p = b[:0]
	pools[i].Put(p)
}

// Poison is the byte a buffer is filled with when it is given back in a
// build with the invariants tag, so that whatever still refers to its
// bytes reads garbage at once (bad CRCs, impossible lengths) instead of,
// now and then, another request's data: a batch kept from a request frame
// past its handler once corrupted the log exactly that way.
const Poison = 0xDB

func poison(b []byte) {
	for i := range b {
		b[i] = Poison
	}
}

// Ref is a pooled buffer with a count of its holders, for bytes that
// several answers send (one log read served to both followers of a
// partition): the last Release gives the buffer back. Once the count has
// reached zero the Ref is dead for good: Retain refuses it, so a holder
// found through a cache that does not count itself (storage's shared
// reads) can never revive a buffer already back in the pool. A Ref is
// never reused, so a stale pointer to one cannot see another buffer's
// count.
type Ref struct {
	buf  []byte
	refs atomic.Int32
}

// NewRef makes b (from Get) a Ref with one holder, the caller.
func NewRef(b []byte) *Ref {
	r := new(Ref)
	r.Init(b)
	return r
}

// Init is NewRef for a Ref embedded in a struct of the caller's (one
// allocation for both): r, never used before, holds b for one holder.
func (r *Ref) Init(b []byte) {
	if invariant.Panics && (r.buf != nil || r.refs.Load() != 0) {
		invariant.Broken("bufpool: Init of a Ref in use")
	}
	r.buf = b
	r.refs.Store(1)
}

// Bytes is the buffer, valid while the caller holds r. With the
// invariants tag it panics on a Ref already released.
func (r *Ref) Bytes() []byte {
	if invariant.Panics && r.refs.Load() <= 0 {
		invariant.Broken("bufpool: use of a buffer after its last release")
	}
	return r.buf
}

// Retain adds a holder unless r is already released, and reports whether
// it did.
func (r *Ref) Retain() bool {
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops the caller's hold; the last one puts the buffer back in
// the pool. Nothing the caller kept of the buffer may be used afterwards.
// A nil Ref is nothing to release. Releasing more often than held is a
// bug that would hand one buffer to two owners: with the invariants tag
// it panics, else it is ignored.
func (r *Ref) Release() {
	if r == nil {
		return
	}
	n := r.refs.Add(-1)
	switch {
	case n == 0:
		b := r.buf
		r.buf = nil
		Put(b)
	case n < 0:
		invariant.Broken("bufpool: buffer released %d more time(s) than held", -n)
	}
}
