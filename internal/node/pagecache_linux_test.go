package node

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// TestPageCacheBudgetDropsIdleFirst: three partitions on real files, each
// within its own 4 MiB window, hold 12 MiB together against a budget of
// 8 MiB. The ledger wakes its run, which advises out the whole cache of the
// partition written first (mincore(2) finds none of its pages) and part of
// the next, leaves the one written last alone, and every record of the
// idle partition still reads back from offset 0.
func TestPageCacheBudgetDropsIdleFirst(t *testing.T) {
	const mib = 1 << 20
	const window = 4 * mib
	c := newPageCacheBudget(8*mib, window)
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 64 * mib
	cfg.SegmentMs = 0
	cfg.RetentionMs = -1
	value := bytes.Repeat([]byte("budget!"), 146) // ~1 KiB records
	values := make([][]byte, 64)
	for i := range values {
		values[i] = value
	}
	b := batch.Build(values, 1)
	var parts []*partition
	var files []string
	var records int64
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), "p")
		l, err := storage.Open(vfs.OS{}, dir, cfg, storage.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PageCacheWindow: window})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		records = 0
		for have := 0; have < window-len(b); have += len(b) {
			if _, err := l.Append(b, 0, 1); err != nil {
				t.Fatal(err)
			}
			records += int64(len(values))
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if n := l.DropCache(); n != 0 {
			t.Fatalf("partition %d: its own window advised out %d bytes", i, n)
		}
		p := &partition{log: l}
		parts = append(parts, p)
		files = append(files, filepath.Join(dir, "00000000000000000000.log"))
		if resident(t, files[i]) == 0 {
			t.Skipf("%s: no page of a file just written is cached (a filesystem without a page cache?)", files[i])
		}
		c.noted(p, l.CachedBytes())
		select {
		case <-c.wake:
			if i < 2 {
				t.Fatalf("a run woken at %d partitions, %d bytes, under the budget", i+1, c.ledger.Total())
			}
		default:
			if i == 2 {
				t.Fatalf("no run woken at %d bytes, over the budget", c.ledger.Total())
			}
		}
	}
	held := parts[1].log.CachedBytes()
	newest := parts[2].log.CachedBytes()
	advised := c.shrink()
	if got := parts[0].log.CachedBytes(); got != 0 {
		t.Fatalf("the idle partition still counts %d cached bytes", got)
	}
	if r := resident(t, files[0]); r != 0 {
		t.Fatalf("%d pages of the idle partition still cached", r)
	}
	if got := parts[1].log.CachedBytes(); got >= held || got == 0 {
		t.Fatalf("the middle partition holds %d cached bytes, had %d: want part of it kept", got, held)
	}
	if got := parts[2].log.CachedBytes(); got != newest || resident(t, files[2]) == 0 {
		t.Fatalf("the partition written last was shrunk: %d cached bytes, had %d", got, newest)
	}
	if c.ledger.Total() != storage.CacheBudgetLow(c.budget) {
		t.Fatalf("ledger total %d after the run, want %d", c.ledger.Total(), storage.CacheBudgetLow(c.budget))
	}
	if advised == 0 {
		t.Fatal("the run advised nothing out")
	}
	// A consumer from offset 0 reads every record of the idle partition.
	var next int64
	for next < records {
		data, err := parts[0].log.Read(next, 1<<20, records, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			t.Fatalf("read at %d of %d returned nothing", next, records)
		}
		for len(data) > 0 {
			base := int64(binary.BigEndian.Uint64(data[0:]))
			size := 12 + int(binary.BigEndian.Uint32(data[8:]))
			if base != next || !bytes.Contains(data[:size], value) {
				t.Fatalf("batch at %d: base %d, want %d and the records written", next, base, next)
			}
			next += int64(binary.BigEndian.Uint32(data[23:])) + 1
			data = data[size:]
		}
	}
	// Closed: the partition leaves the ledger.
	c.forget(parts[2])
	if _, ok := c.ledger.Cached(parts[2]); ok || c.ledger.Total() != storage.CacheBudgetLow(c.budget)-newest {
		t.Fatalf("forget left the entry or a total of %d", c.ledger.Total())
	}
}

// TestPageCacheBudgetOff: no budget without a bound or a window.
func TestPageCacheBudgetOff(t *testing.T) {
	if newPageCacheBudget(0, 1<<20) != nil || newPageCacheBudget(1<<30, 0) != nil {
		t.Fatal("a budget without a bound or without a window")
	}
	var c *pageCacheBudget
	c.noted(&partition{}, 1<<30) // nil does nothing
	c.forget(&partition{})
}

// resident counts the pages of the file at path in the page cache.
func resident(t *testing.T, path string) int {
	t.Helper()
	n, err := vfs.ResidentPages(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
