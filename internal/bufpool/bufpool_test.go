package bufpool

import "testing"

// Get returns buffers of the asked length whose capacity is at least
// their class, whatever Put gave back before.
func TestGetPut(t *testing.T) {
	for _, n := range []int{0, 1, Min - 1, Min, Min + 1, 1 << 20, 3<<20 + 5} {
		for range 3 {
			b := Get(n)
			if len(b) != n {
				t.Fatalf("Get(%d): length %d", n, len(b))
			}
			if n >= Min && cap(b)&(cap(b)-1) != 0 {
				t.Fatalf("Get(%d): capacity %d is not a size class", n, cap(b))
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
