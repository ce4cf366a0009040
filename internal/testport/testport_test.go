package testport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestCandidateRangesStayOutOfTheEphemeralRange(t *testing.T) {
	for _, tt := range []struct {
		eph  [2]int
		span int
		want [][2]int
	}{
		{[2]int{32768, 60999}, 0, [][2]int{{20000, 32767}, {61000, 65535}}},
		{[2]int{32768, 60999}, 201, [][2]int{{20000, 32566}, {61000, 65334}}},
		{[2]int{1024, 65535}, 0, nil},
		{[2]int{20000, 65000}, 600, nil},
		{[2]int{30000, 65535}, 0, [][2]int{{20000, 29999}}},
	} {
		got := candidateRanges(tt.eph, tt.span)
		if len(got) != len(tt.want) {
			t.Errorf("candidateRanges(%v, %d) = %v, want %v", tt.eph, tt.span, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("candidateRanges(%v, %d) = %v, want %v", tt.eph, tt.span, got, tt.want)
			}
		}
	}
}

func TestReservedPortsAreDistinctBindableAndOutsideTheEphemeralRange(t *testing.T) {
	eph := ephemeralRange()
	seen := map[int]bool{}
	for range 50 {
		p := One(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if p >= eph[0] && p <= eph[1] {
			t.Fatalf("port %d is in the ephemeral range %v", p, eph)
		}
		if err := FreeOn("127.0.0.1")(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBlockHoldsEveryOffset(t *testing.T) {
	offsets := []int{0, 1, 100, 101, 200, 201}
	base := Block(t, offsets, nil)
	for _, off := range offsets {
		if !held[base+off] {
			t.Errorf("port %d of the block is not held", base+off)
		}
	}
}

// Another process's lock is what keeps two test binaries apart: a second
// open file description of the lock file (as another process would have)
// cannot take it while it is held, and can once the test releases it.
func TestHeldPortIsLockedAgainstOtherOpeners(t *testing.T) {
	var port int
	t.Run("hold", func(t *testing.T) {
		port = One(t)
		if tryLock(t, port) {
			t.Fatalf("port %d could be locked again while held", port)
		}
	})
	if !tryLock(t, port) {
		t.Fatalf("port %d is still locked after its test ended", port)
	}
}

func tryLock(t *testing.T, port int) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "skein-test-ports", strconv.Itoa(port)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
