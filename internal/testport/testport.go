// Package testport hands tests TCP ports they can bind later, restart on,
// and share with other test processes on the same machine without racing.
//
// The usual trick (listen on port 0, note the port, close) races: between
// the close and the broker's own bind, the kernel may give that port to an
// outgoing connection of any process as its ephemeral source port, or
// another test binary may pick it the same way. Both happened in CI
// ("bind: address already in use"). So ports come from outside the
// kernel's ephemeral range, which connect() never draws from, and each
// one is held by an advisory file lock for as long as the test runs,
// which other processes using this package respect; the kernel drops the
// lock if the process dies, so nothing stale is left to clean up.
package testport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Candidate ports start here: below are well-known service ports and the
// fixed ones other tests publish (skein dev's 9092 and up, the Compose
// file's 11092 to 13644).
const lowestPort = 20000

// attempts bounds the search for a free set of ports.
const attempts = 500

// ephemeralRangeFile is where Linux keeps the range it draws ephemeral
// ports from.
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// defaultEphemeral is Linux's default range, used when the file cannot be
// read.
var defaultEphemeral = [2]int{32768, 60999}

var (
	mu   sync.Mutex
	held = map[int]bool{} // ports this process holds
)

// One reserves a port free on 127.0.0.1 for the rest of the test.
func One(tb testing.TB) int {
	tb.Helper()
	return Block(tb, []int{0}, FreeOn("127.0.0.1"))
}

// Block reserves base+off for every off in offsets (all >= 0) and returns
// base. usable, if not nil, must accept each of those ports (it checks
// that nothing listens there on the hosts the test will use). The ports
// are released when the test ends.
func Block(tb testing.TB, offsets []int, usable func(port int) error) int {
	tb.Helper()
	span := 0
	for _, off := range offsets {
		if off < 0 {
			tb.Fatalf("testport: negative offset %d", off)
		}
		span = max(span, off)
	}
	ranges := candidateRanges(ephemeralRange(), span)
	if len(ranges) == 0 {
		tb.Fatalf("testport: no port range outside the ephemeral one for a span of %d", span)
	}
	for range attempts {
		r := ranges[rand.IntN(len(ranges))]
		base := r[0] + rand.IntN(r[1]-r[0]+1)
		locks, err := lockAll(base, offsets)
		if err != nil {
			continue
		}
		if usable != nil && !allUsable(base, offsets, usable) {
			unlockAll(locks)
			continue
		}
		tb.Cleanup(func() { unlockAll(locks) })
		return base
	}
	tb.Fatalf("testport: no free ports for offsets %v after %d attempts", offsets, attempts)
	return 0
}

// FreeOn returns a check that nothing listens on port on any of hosts.
func FreeOn(hosts ...string) func(port int) error {
	return func(port int) error {
		for _, h := range hosts {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("%s:%d is taken: %w", h, port, err)
			}
			l.Close()
		}
		return nil
	}
}

func allUsable(base int, offsets []int, usable func(int) error) bool {
	for _, off := range offsets {
		if usable(base+off) != nil {
			return false
		}
	}
	return true
}

// candidateRanges are the inclusive ranges of base ports whose whole span
// stays out of the ephemeral range and within 65535.
func candidateRanges(eph [2]int, span int) [][2]int {
	var out [][2]int
	if hi := eph[0] - 1 - span; hi >= lowestPort {
		out = append(out, [2]int{lowestPort, hi})
	}
	if lo, hi := max(eph[1]+1, lowestPort), 65535-span; lo <= hi {
		out = append(out, [2]int{lo, hi})
	}
	return out
}

func ephemeralRange() [2]int {
	b, err := os.ReadFile(ephemeralRangeFile)
	if err != nil {
		return defaultEphemeral
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return defaultEphemeral
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return defaultEphemeral
	}
	return [2]int{lo, hi}
}

// portLock is one held port: its lock file stays open while held.
type portLock struct {
	port int
	file *os.File
}

var errTaken = errors.New("port held by another test")

// lockAll takes every port of the block or none.
func lockAll(base int, offsets []int) ([]portLock, error) {
	var locks []portLock
	for _, off := range offsets {
		l, err := lock(base + off)
		if err != nil {
			unlockAll(locks)
			return nil, err
		}
		locks = append(locks, l)
	}
	return locks, nil
}

func lock(port int) (portLock, error) {
	mu.Lock()
	defer mu.Unlock()
	if held[port] {
		return portLock{}, errTaken
	}
	dir := filepath.Join(os.TempDir(), "skein-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return portLock{}, fmt.Errorf("lock directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return portLock{}, fmt.Errorf("lock file: %w", err)
	}
	// flock locks belong to the open file, so they exclude other processes
	// and are released when the file closes or the process dies.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return portLock{}, errTaken
	}
	held[port] = true
	return portLock{port: port, file: f}, nil
}

func unlockAll(locks []portLock) {
	mu.Lock()
	defer mu.Unlock()
	for _, l := range locks {
		l.file.Close()
		delete(held, l.port)
	}
}
