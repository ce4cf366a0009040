package storage

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

const mib = 1 << 20

func TestPlanCacheDrop(t *testing.T) {
	const w = 16 * mib // step: 4 MiB
	type want struct {
		drops []cacheDrop
		mark  cacheMark
	}
	cases := []struct {
		name    string
		mark    cacheMark
		extents []cacheExtent
		window  int64
		want    want
	}{
		{"no window", cacheMark{}, []cacheExtent{{0, 100 * mib}}, 0, want{nil, cacheMark{}}},
		{"no segments", cacheMark{}, nil, w, want{nil, cacheMark{}}},
		{"less than a window durable", cacheMark{}, []cacheExtent{{0, 10 * mib}, {100, 5 * mib}}, w, want{nil, cacheMark{}}},
		{"exactly a window", cacheMark{}, []cacheExtent{{0, 16 * mib}}, w, want{nil, cacheMark{}}},
		{"below the step", cacheMark{}, []cacheExtent{{0, 16*mib + 4*mib - 1}}, w, want{nil, cacheMark{}}},
		{"one step", cacheMark{}, []cacheExtent{{0, 20 * mib}}, w,
			want{[]cacheDrop{{0, 0, 4 * mib}}, cacheMark{0, 4 * mib}}},
		{"from the mark", cacheMark{0, 4 * mib}, []cacheExtent{{0, 30 * mib}}, w,
			want{[]cacheDrop{{0, 4 * mib, 10 * mib}}, cacheMark{0, 14 * mib}}},
		{"from the mark, below the step", cacheMark{0, 4 * mib}, []cacheExtent{{0, 23 * mib}}, w, want{nil, cacheMark{0, 4 * mib}}},
		// The window counts back over segments: 16 MiB = 6 of the
		// active one and 10 of the rolled one before it.
		{"window over a roll", cacheMark{0, 4 * mib}, []cacheExtent{{0, 30 * mib}, {1000, 6 * mib}}, w,
			want{[]cacheDrop{{0, 4 * mib, 16 * mib}}, cacheMark{0, 20 * mib}}},
		// A rolled segment wholly outside the window is finished at
		// once, even below the step (here 1 MiB of it is left).
		{"rolled segment finished", cacheMark{0, 29 * mib}, []cacheExtent{{0, 30 * mib}, {1000, 16 * mib}}, w,
			want{[]cacheDrop{{0, 29 * mib, 1 * mib}}, cacheMark{1000, 0}}},
		{"rolled and active", cacheMark{0, 29 * mib}, []cacheExtent{{0, 30 * mib}, {1000, 17 * mib}}, w,
			want{[]cacheDrop{{0, 29 * mib, 1 * mib}, {1, 0, 1 * mib}}, cacheMark{1000, 1 * mib}}},
		// Segments below the mark's were advised out before; a gone
		// mark segment (retention) leaves later segments whole.
		{"segments below the mark", cacheMark{1000, 2 * mib}, []cacheExtent{{0, 30 * mib}, {1000, 30 * mib}}, w,
			want{[]cacheDrop{{1, 2 * mib, 12 * mib}}, cacheMark{1000, 14 * mib}}},
		{"mark segment deleted", cacheMark{500, 2 * mib}, []cacheExtent{{1000, 30 * mib}}, w,
			want{[]cacheDrop{{0, 0, 14 * mib}}, cacheMark{1000, 14 * mib}}},
		// Nothing past the durable size: a segment not covered by a
		// Sync has size 0 and counts for nothing.
		{"unsynced active", cacheMark{}, []cacheExtent{{0, 18 * mib}, {1000, 0}}, w, want{nil, cacheMark{}}},
		{"window grown past the mark", cacheMark{0, 20 * mib}, []cacheExtent{{0, 30 * mib}}, 64 * mib, want{nil, cacheMark{0, 20 * mib}}},
		{"small window, 1 MiB step", cacheMark{}, []cacheExtent{{0, 64<<10 + mib}}, 64 << 10,
			want{[]cacheDrop{{0, 0, mib}}, cacheMark{0, mib}}},
		{"small window, below 1 MiB", cacheMark{}, []cacheExtent{{0, 64<<10 + mib - 1}}, 64 << 10, want{nil, cacheMark{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.extents)
			drops, mark := planCacheDrop(c.mark, c.extents, c.window, nil)
			if !slices.Equal(drops, c.want.drops) || mark != c.want.mark {
				t.Fatalf("planCacheDrop(%v, %v, %d) = %v, %v; want %v, %v", c.mark, c.extents, c.window, drops, mark, c.want.drops, c.want.mark)
			}
			if !slices.Equal(in, c.extents) {
				t.Fatal("planCacheDrop changed its input")
			}
		})
	}
}

// TestPlanCacheDropAppends: the ranges go after what dst holds, and a
// decision to do nothing leaves dst as it was.
func TestPlanCacheDropAppends(t *testing.T) {
	dst := []cacheDrop{{7, 1, 2}}
	got, _ := planCacheDrop(cacheMark{}, []cacheExtent{{0, 1 * mib}}, 16*mib, dst)
	if !slices.Equal(got, dst) {
		t.Fatalf("nothing to drop: got %v", got)
	}
	got, _ = planCacheDrop(cacheMark{}, []cacheExtent{{0, 21 * mib}}, 16*mib, dst)
	if want := []cacheDrop{{7, 1, 2}, {0, 0, 5 * mib}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestCacheMarkTruncatedTo(t *testing.T) {
	m := cacheMark{1000, 5 * mib}
	for _, c := range []struct {
		base, size int64
		want       cacheMark
	}{
		{1000, 8 * mib, m},                        // cut above the mark: nothing changes
		{1000, 3 * mib, cacheMark{1000, 3 * mib}}, // below it in its segment
		{0, 2 * mib, cacheMark{0, 2 * mib}},       // in an earlier segment
		{2000, 0, m},                              // in a later one
	} {
		if got := m.truncatedTo(c.base, c.size); got != c.want {
			t.Errorf("truncatedTo(%d, %d) = %v, want %v", c.base, c.size, got, c.want)
		}
	}
}

// dropTestConfig has 8 MiB segments, so a drop-behind window of 4 MiB
// (1 MiB steps) crosses rolls.
func dropTestConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 8 * mib
	c.SegmentMs = 0
	c.RetentionMs = -1
	return c
}

// appendBytes appends batches of about 64 KiB until n more bytes are in
// the log.
func appendBytes(t *testing.T, l *Log, n int64, seed byte) {
	t.Helper()
	b := makeBatch(64, 1000, 1, seed)
	for have := int64(0); have < n; have += int64(len(b)) {
		mustAppend(t, l, b, 0, 1)
	}
}

// segmentSizes maps segment file names to their durable sizes, so drops
// can be checked against files.
func segmentBytes(t *testing.T, l *Log) map[string]int64 {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	m := map[string]int64{}
	for _, s := range l.segments {
		m[s.file.Name()] = s.size
	}
	return m
}

// TestDropCacheAdvisesDurableOutsideWindow: on the in-memory FS (which
// records the advice and, under -tags invariants, panics at advice over
// unsynced bytes), what DropCache advises out is exactly the durable data
// outside the window, in steps, each byte once; nothing before a Sync.
func TestDropCacheAdvisesDurableOutsideWindow(t *testing.T) {
	fs := vfs.NewMem()
	opts := quietOptions()
	const window = 4 * mib
	opts.PageCacheWindow = window
	l, err := Open(fs, "/p", dropTestConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fs.CacheDrops()

	// Appended but not synced: nothing, however much.
	appendBytes(t, l, 12*mib, 1)
	if n := l.DropCache(); n != 0 {
		t.Fatalf("DropCache before any Sync advised %d bytes", n)
	}
	if d := fs.CacheDrops(); len(d) != 0 {
		t.Fatalf("drops before a Sync: %v", d)
	}

	// advised[name] is the byte range [0, advised) of each file.
	advised := map[string]int64{}
	var total int64
	check := func(label string) {
		t.Helper()
		n := l.DropCache()
		var sum int64
		for _, d := range fs.CacheDrops() {
			if d.Off != advised[d.Name] {
				t.Fatalf("%s: drop %+v does not start where the last ended (%d)", label, d, advised[d.Name])
			}
			advised[d.Name] = d.Off + d.N
			sum += d.N
		}
		if sum != n {
			t.Fatalf("%s: DropCache said %d bytes, the FS saw %d", label, n, sum)
		}
		total += n
		// Everything advised is durable and outside the window; what is
		// left outside the window is below a step, or is in the active
		// segment.
		sizes := segmentBytes(t, l)
		var durable int64
		for _, sz := range sizes {
			durable += sz
		}
		if total > durable-window {
			t.Fatalf("%s: advised %d of %d durable bytes, inside the %d window", label, total, durable, window)
		}
		if left := durable - window - total; left >= cacheDropStep(window) {
			t.Fatalf("%s: %d bytes outside the window still cached", label, left)
		}
		for name, end := range advised {
			if end > sizes[name] {
				t.Fatalf("%s: advised %s to %d past its size %d", label, name, end, sizes[name])
			}
		}
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	check("first sync")
	for round := range 20 {
		appendBytes(t, l, 300<<10, byte(round))
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("round %d", round))
	}
	if total < 12*mib {
		t.Fatalf("advised %d bytes in all; want at least 12 MiB", total)
	}
	// Appended since the last Sync: never advised out (the active
	// segment's durable size is what the Sync covered).
	durable := segmentBytes(t, l)
	appendBytes(t, l, 8*mib, 9)
	l.DropCache()
	for _, d := range fs.CacheDrops() {
		if d.Off+d.N > durable[d.Name] {
			t.Fatalf("drop %+v reaches past the durable %d bytes of its file", d, durable[d.Name])
		}
	}
}

// TestDropCacheExactRanges follows one log through roll, truncation,
// deletion and restart, with the exact ranges each step advises.
func TestDropCacheExactRanges(t *testing.T) {
	fs := vfs.NewMem()
	opts := quietOptions()
	opts.PageCacheWindow = 4 * mib // steps of 1 MiB
	cfg := dropTestConfig()
	l, err := Open(fs, "/p", cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := makeBatch(64, 1000, 1, 3) // one batch's size, to place cuts
	bs := int64(len(b))
	appendN := func(n int) {
		for range n {
			mustAppend(t, l, b, 0, 1)
		}
	}
	sync := func() {
		t.Helper()
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(label string, want ...vfs.CacheDrop) {
		t.Helper()
		l.DropCache()
		if got := fs.CacheDrops(); !slices.Equal(got, want) {
			t.Fatalf("%s: drops %v, want %v", label, got, want)
		}
	}
	seg0 := segmentFileName("/p", 0, logSuffix)
	perMiB := int((mib + bs - 1) / bs)
	appendN(5 * perMiB) // a little over 5 MiB
	sync()
	size0 := int64(5*perMiB) * bs
	expect("first step", vfs.CacheDrop{Name: seg0, Off: 0, N: size0 - 4*mib})
	mark := size0 - 4*mib
	appendN(perMiB / 2)
	sync()
	expect("half a step")
	appendN(perMiB - perMiB/2)
	sync()
	size0 += int64(perMiB) * bs
	expect("a step", vfs.CacheDrop{Name: seg0, Off: mark, N: size0 - 4*mib - mark})
	if mark = size0 - 4*mib; l.cacheMark != (cacheMark{0, mark}) {
		t.Fatalf("mark %v, want {0 %d}", l.cacheMark, mark)
	}

	// Truncation below the mark: the mark comes down to the cut, so the
	// data written again there is advised out in its turn.
	cutOffset := int64(perMiB) // offsets: 64 records per batch
	cutOffset *= 64
	if err := l.Truncate(cutOffset); err != nil {
		t.Fatal(err)
	}
	size0 = int64(perMiB) * bs
	if l.cacheMark != (cacheMark{0, size0}) {
		t.Fatalf("mark after truncation %v, want {0 %d}", l.cacheMark, size0)
	}
	expect("after truncation")
	appendN(5 * perMiB)
	sync()
	size0 += int64(5*perMiB) * bs
	expect("rewritten", vfs.CacheDrop{Name: seg0, Off: int64(perMiB) * bs, N: size0 - 4*mib - int64(perMiB)*bs})

	// A restart starts over: the first DropCache advises out everything
	// outside the window, from the start.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fs.CacheDrops()
	l, err = Open(fs, "/p", cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	expect("after restart", vfs.CacheDrop{Name: seg0, Off: 0, N: size0 - 4*mib})
}

// TestDropCacheTruncateFully: a log restarted empty elsewhere starts with
// nothing durable and nothing advised.
func TestDropCacheTruncateFully(t *testing.T) {
	fs := vfs.NewMem()
	opts := quietOptions()
	opts.PageCacheWindow = 2 * mib
	l, err := Open(fs, "/p", dropTestConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBytes(t, l, 6*mib, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if l.DropCache() == 0 {
		t.Fatal("nothing advised out of 6 MiB with a 2 MiB window")
	}
	if err := l.TruncateFullyAndStartAt(50); err != nil {
		t.Fatal(err)
	}
	if l.cacheMark != (cacheMark{}) || l.synced != (cacheExtent{}) {
		t.Fatalf("after TruncateFullyAndStartAt: mark %v synced %v", l.cacheMark, l.synced)
	}
	fs.CacheDrops()
	appendBytes(t, l, 4*mib, 2)
	if n := l.DropCache(); n != 0 {
		t.Fatalf("advised %d bytes of a log never synced since its restart", n)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.DropCache()
	d := fs.CacheDrops()
	if len(d) != 1 || d[0].Name != segmentFileName("/p", 50, logSuffix) || d[0].Off != 0 {
		t.Fatalf("drops %v, want one range of the new segment from 0", d)
	}
}

// TestDropCacheConcurrent: DropCache from one goroutine while another
// appends, syncs and deletes old segments (run with -race; under -tags
// invariants Mem also breaks at advice over unsynced bytes, and a drop on
// a closed file would fail and go uncounted): what DropCache reports is
// what the FS recorded.
func TestDropCacheConcurrent(t *testing.T) {
	fs := vfs.NewMem()
	opts := quietOptions()
	opts.PageCacheWindow = 2 * mib
	cfg := dropTestConfig()
	cfg.SegmentBytes = 2 * mib
	l, err := Open(fs, "/p", cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error)
	go func() {
		b := makeBatch(64, 1000, 1, 5)
		for i := range 600 { // about 38 MiB
			if _, err := l.Append(b, 0, 1); err != nil {
				done <- err
				return
			}
			if i%8 == 7 {
				if _, err := l.Sync(); err != nil {
					done <- err
					return
				}
			}
			if i%100 == 99 {
				if err := l.DeleteBefore(l.LogEndOffset() - 64*64); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	var advised int64
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			advised += l.DropCache()
		}
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	advised += l.DropCache()
	var recorded int64
	for _, d := range fs.CacheDrops() {
		recorded += d.N
	}
	if advised == 0 || recorded != advised {
		t.Fatalf("DropCache advised %d bytes, the FS recorded %d", advised, recorded)
	}
}
