package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

var errPowerLoss = errors.New("simulated power loss")

// crasher fails every filesystem call from the at-th one on, crashing the
// Mem (losing unsynced data) at that call: power loss at an exact point
// inside whatever the log was doing.
type crasher struct {
	fs      *vfs.Mem
	count   int
	at      int // 0: never
	crashed bool
	opts    vfs.CrashOptions
}

func (c *crasher) fault(op vfs.Op, path string) error {
	if c.crashed {
		return errPowerLoss
	}
	c.count++
	if c.count == c.at {
		c.crashed = true
		c.fs.Crash(c.opts)
		return errPowerLoss
	}
	return nil
}

// crashModel is what the test knows about the log.
type crashModel struct {
	current  map[int64][]byte   // the log's batches by base offset, as appended
	ever     map[int64][][]byte // every batch ever appended at each base offset
	durable  int64              // Sync promised everything below this
	logStart int64              // a completed DeleteBefore/retention promised this
	maxStart int64              // the largest log start ever attempted
}

func newCrashModel() *crashModel {
	return &crashModel{current: map[int64][]byte{}, ever: map[int64][][]byte{}}
}

func (m *crashModel) appended(base int64, b []byte) {
	m.current[base] = bytes.Clone(b)
	m.ever[base] = append(m.ever[base], bytes.Clone(b))
}

func (m *crashModel) truncate(offset int64) {
	for base := range m.current {
		if base >= offset {
			delete(m.current, base)
		}
	}
	m.durable = min(m.durable, offset)
}

// runScript drives a log with random operations picked from rng until
// steps are done or the filesystem "loses power" (c.crashed), recording in m
// what the log promised.
func runScript(t *testing.T, fs *vfs.Mem, c *crasher, rng *rand.Rand, steps int, m *crashModel) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	l, err := Open(fs, "/data/p0", cfg, quietOptions())
	if err != nil {
		if c.crashed {
			return
		}
		t.Fatalf("open: %v", err)
	}
	m.durable = max(m.durable, l.DurableEndOffset())
	epoch := int32(1)
	for step := 0; step < steps && !c.crashed; step++ {
		var err error
		switch p := rng.IntN(100); {
		case p < 60:
			n := 1 + rng.IntN(5)
			size := 10 + rng.IntN(300)
			if rng.IntN(20) == 0 {
				n, size = 1, 1500 // nearly a whole segment
			}
			b := makeBatch(n, size, int64(step*100), byte(rng.IntN(256)))
			if rng.IntN(15) == 0 {
				epoch++
			}
			var res AppendResult
			res, err = l.Append(b, epoch, int64(step))
			if err == nil {
				m.appended(res.BaseOffset, b)
			}
		case p < 82:
			var end int64
			end, err = l.Sync()
			if err == nil {
				m.durable = max(m.durable, end)
			}
		case p < 86:
			bases := sortedBases(m.current, l.LogStartOffset())
			if len(bases) > 0 {
				to := bases[rng.IntN(len(bases))]
				m.truncate(to) // promises about the tail end here
				err = l.Truncate(to)
			}
		case p < 90:
			target := l.LogStartOffset() + int64(rng.IntN(int(l.LogEndOffset()-l.LogStartOffset()+1)))
			m.maxStart = max(m.maxStart, target)
			err = l.DeleteBefore(target)
			if err == nil {
				m.logStart = max(m.logStart, target)
			}
		case p < 93:
			l.SetConfig(Config{SegmentBytes: cfg.SegmentBytes, IndexIntervalBytes: cfg.IndexIntervalBytes, RetentionBytes: 3 * cfg.SegmentBytes, RetentionMs: -1})
			m.maxStart = max(m.maxStart, l.active().base)
			_, err = l.EnforceRetention(0)
			if err == nil {
				m.logStart = max(m.logStart, l.LogStartOffset())
			}
			l.SetConfig(cfg)
		case p < 96:
			// Clean restart.
			if err = l.Close(); err == nil {
				m.durable = max(m.durable, l.LogEndOffset())
				l, err = Open(fs, "/data/p0", cfg, quietOptions())
			}
		default:
			// Process crash: the page cache survives, the Log does not.
			var nl *Log
			nl, err = Open(fs, "/data/p0", cfg, quietOptions())
			if err == nil {
				l = nl
				m.durable = max(m.durable, l.DurableEndOffset())
			}
		}
		if err != nil && !c.crashed {
			t.Fatalf("step %d: %v", step, err)
		}
		if l == nil {
			return
		}
	}
}

func sortedBases(current map[int64][]byte, from int64) []int64 {
	var out []int64
	for base := range current {
		if base >= from {
			out = append(out, base)
		}
	}
	return out
}

// checkRecovered opens the log after a crash and checks the promises.
func checkRecovered(t *testing.T, fs *vfs.Mem, m *crashModel, label string) {
	t.Helper()
	l, err := Open(fs, "/data/p0", smallConfig(), quietOptions())
	if err != nil {
		t.Fatalf("%s: reopen: %v", label, err)
	}
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if start < m.logStart || start > max(m.maxStart, m.logStart) {
		t.Fatalf("%s: log start %d outside [%d, %d]", label, start, m.logStart, m.maxStart)
	}
	if end < m.durable && start <= m.durable {
		t.Fatalf("%s: log end %d below durable end %d", label, end, m.durable)
	}
	next := start
	for _, b := range readAll(t, l) {
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() < next {
			t.Fatalf("%s: batch %d not contiguous", label, h.BaseOffset)
		}
		next = h.LastOffset() + 1
		if h.LastOffset() < m.durable {
			if want := m.current[h.BaseOffset]; !bytes.Equal(b, want) {
				t.Fatalf("%s: durable batch at %d differs from what was appended", label, h.BaseOffset)
			}
			continue
		}
		known := false
		for _, want := range m.ever[h.BaseOffset] {
			known = known || bytes.Equal(b, want)
		}
		if !known {
			t.Fatalf("%s: batch at %d was never appended", label, h.BaseOffset)
		}
	}
	if next != end {
		t.Fatalf("%s: batches end at %d, log end %d", label, next, end)
	}
	for _, e := range l.Epochs().Entries() {
		if e.StartOffset >= end && end > start {
			t.Fatalf("%s: epoch entry %+v at or past log end %d", label, e, end)
		}
	}
	// The log takes new appends and serves them.
	b := makeBatch(2, 50, 0, 7)
	res, err := l.Append(b, 1000, 0)
	if err != nil {
		t.Fatalf("%s: append after recovery: %v", label, err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatalf("%s: sync after recovery: %v", label, err)
	}
	got, err := l.Read(res.BaseOffset, 1<<20, res.LastOffset+1, true)
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("%s: read back new batch: %v", label, err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("%s: close: %v", label, err)
	}
}

// TestCrashAtEveryFilesystemCall replays the same random workload, cutting
// power at each filesystem call in turn (with and without torn writes), and
// checks recovery every time.
func TestCrashAtEveryFilesystemCall(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	steps := 60
	if testing.Short() {
		seeds, steps = seeds[:1], 30
	}
	for _, seed := range seeds {
		// Count the calls of an uninterrupted run.
		fs := vfs.NewMem()
		c := &crasher{fs: fs}
		fs.SetFault(c.fault)
		runScript(t, fs, c, rand.New(rand.NewPCG(seed, 0)), steps, newCrashModel())
		total := c.count
		for at := 1; at <= total+1; at++ {
			for _, torn := range []bool{false, true} {
				fs := vfs.NewMem()
				c := &crasher{fs: fs, at: at, opts: vfs.CrashOptions{TornWrites: torn, Seed: seed*1000 + uint64(at)}}
				fs.SetFault(c.fault)
				m := newCrashModel()
				runScript(t, fs, c, rand.New(rand.NewPCG(seed, 0)), steps, m)
				if !c.crashed {
					fs.Crash(c.opts)
				}
				fs.SetFault(nil)
				checkRecovered(t, fs, m, fmt.Sprintf("seed %d crash at call %d/%d torn=%v", seed, at, total, torn))
			}
		}
	}
}

// TestTornWritesManySeeds crashes after a long unsynced tail with many
// torn-write seeds: recovery must keep exactly a valid prefix.
func TestTornWritesManySeeds(t *testing.T) {
	for seed := range uint64(200) {
		fs := vfs.NewMem()
		m := newCrashModel()
		l := openLog(t, fs, "/data/p0", smallConfig())
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := range 30 {
			b := makeBatch(1+rng.IntN(3), rng.IntN(400), int64(i), byte(i))
			res := mustAppend(t, l, b, 0, 0)
			m.appended(res.BaseOffset, b)
			if i == 10 {
				end, err := l.Sync()
				if err != nil {
					t.Fatal(err)
				}
				m.durable = end
			}
		}
		fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: seed})
		checkRecovered(t, fs, m, fmt.Sprintf("seed %d", seed))
	}
}
