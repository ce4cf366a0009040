package bufpool

import (
	"testing"

	"github.com/skein-log/skein/internal/invariant"
)

// Get returns buffers of the asked length whose capacity is at least
// their class, whatever Put gave back before.
func TestGetPut(t *testing.T) {
	for _, n := range []int{0, 1, Min - 1, Min, Min + 1, 1 << 20, 3<<20 + 5} {
		for range 3 {
			b := Get(n)
			if len(b) != n {
				t.Fatalf("Get(%d): length %d", n, len(b))
			}
			if n >= Min && cap(b) != size(ceilClass(n)) {
				t.Fatalf("Get(%d): capacity %d is not its size class %d", n, cap(b), size(ceilClass(n)))
			}
			if n >= Min && cap(b) > n+n/4 {
				t.Fatalf("Get(%d): capacity %d is more than 25%% over", n, cap(b))
			}
			Put(b)
		}
	}
	// A buffer cut below its class's capacity is pooled in the class it
	// still fills.
	Put(make([]byte, 0, 3*Min))
	if b := Get(2 * Min); cap(b) < 2*Min {
		t.Fatalf("Get(%d) returned capacity %d", 2*Min, cap(b))
	}
}

// The classes grow, each Get fits in its class, and each capacity's floor
// class fits in that capacity.
func TestClasses(t *testing.T) {
	for i := 1; i < classes; i++ {
		if size(i) <= size(i-1) {
			t.Fatalf("class %d (%d) not above class %d (%d)", i, size(i), i-1, size(i-1))
		}
	}
	if size(0) != Min || size(classes-1) != Max {
		t.Fatalf("classes span %d..%d, want %d..%d", size(0), size(classes-1), Min, Max)
	}
	for n := Min; n <= Max; n += 4093 * 7 {
		c := ceilClass(n)
		if size(c) < n || (c > 0 && size(c-1) >= n) {
			t.Fatalf("ceilClass(%d) = %d (size %d)", n, c, size(c))
		}
		f := floorClass(n)
		if size(f) > n || (f+1 < classes && size(f+1) <= n) {
			t.Fatalf("floorClass(%d) = %d (size %d)", n, f, size(f))
		}
	}
}

// A Get and Put of a pooled buffer allocate nothing once the pool is warm:
// the lone-record path puts a buffer back several times per record.
func BenchmarkGetPut(b *testing.B) {
	Put(Get(Min))
	b.ReportAllocs()
	for b.Loop() {
		Put(Get(Min))
	}
}

// TestGetPutAllocates nothing in steady state. sync.Pool may drop what it
// holds at a GC, so a few runs may allocate a buffer again; well under
// one allocation per call is what a pooled slice header achieves.
func TestGetPutAllocatesNothing(t *testing.T) {
	Put(Get(Min))
	if n := testing.AllocsPerRun(1000, func() { Put(Get(Min)) }); n >= 0.5 {
		t.Fatalf("Get+Put allocates %.2f times per call", n)
	}
}

// TestPutPoisonsUnderInvariants: with the invariants tag, a buffer given
// back is overwritten, so a use after Put shows at once.
func TestPutPoisonsUnderInvariants(t *testing.T) {
	if !invariant.Panics {
		t.Skip("poisoning is on only with -tags invariants")
	}
	b := make([]byte, Min)
	for i := range b {
		b[i] = 1
	}
	kept := b[:16]
	Put(b)
	for i, c := range kept {
		if c != Poison {
			t.Fatalf("byte %d after Put is %#x, want %#x", i, c, Poison)
		}
	}
}

// A Ref's buffer goes back to the pool with its last release, not before;
// a released Ref cannot be retained again; and with the invariants tag a
// release more than held, or a use after the last release, panics.
func TestRef(t *testing.T) {
	b := Get(Min)
	b[0] = 1
	r := NewRef(b)
	if !r.Retain() {
		t.Fatal("Retain of a held Ref refused")
	}
	r.Release()
	if got := r.Bytes(); &got[0] != &b[0] || got[0] != 1 {
		t.Fatal("buffer given back before its last release")
	}
	r.Release()
	if r.Retain() {
		t.Fatal("Retain revived a released Ref")
	}
	if invariant.Panics && b[0] != Poison {
		t.Fatal("last release did not give the buffer back")
	}
	var nilRef *Ref
	nilRef.Release()
	for name, misuse := range map[string]func(){"release": r.Release, "use": func() { r.Bytes() }} {
		func() {
			defer func() {
				if p := recover(); (p != nil) != invariant.Panics {
					t.Fatalf("%s after the last release: panic %v, invariants %v", name, p, invariant.Panics)
				}
			}()
			misuse()
		}()
	}
}
