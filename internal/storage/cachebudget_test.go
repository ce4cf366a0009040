package storage

import (
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

func TestPlanCacheBudget(t *testing.T) {
	const b = 100 * mib // low water: 75 MiB
	cases := []struct {
		name   string
		uses   []CacheUse
		budget int64
		want   []CacheShrink
	}{
		{"no budget", []CacheUse{{500 * mib, 1}}, 0, nil},
		{"negative budget", []CacheUse{{500 * mib, 1}}, -1, nil},
		{"nothing cached", nil, b, nil},
		{"under the budget", []CacheUse{{40 * mib, 1}, {50 * mib, 2}}, b, nil},
		{"exactly the budget", []CacheUse{{50 * mib, 1}, {50 * mib, 2}}, b, nil},
		// 120 over 100: 45 MiB must go to reach 75; the oldest (seq 1,
		// index 1) gives all 30, the next (seq 2) 15 of its 40.
		{"oldest first, the last in part", []CacheUse{{50 * mib, 3}, {30 * mib, 1}, {40 * mib, 2}}, b,
			[]CacheShrink{{1, 0}, {2, 25 * mib}}},
		// The newest log is left alone while the others make room.
		{"newest untouched", []CacheUse{{64 * mib, 9}, {64 * mib, 4}}, b, []CacheShrink{{1, 11 * mib}}},
		// A budget below the newest log's cache: the others go whole, then
		// the newest gives what is still needed.
		{"newest shrunk last", []CacheUse{{90 * mib, 9}, {20 * mib, 4}}, b, []CacheShrink{{1, 0}, {0, 75 * mib}}},
		// Logs with nothing cached are not listed.
		{"empty logs skipped", []CacheUse{{0, 1}, {60 * mib, 5}, {0, 2}, {60 * mib, 6}}, b, []CacheShrink{{1, 15 * mib}}},
		// Equal sequence numbers (a ledger that never saw a write): by index.
		{"ties by index", []CacheUse{{60 * mib, 0}, {60 * mib, 0}}, b, []CacheShrink{{0, 15 * mib}}},
		{"one byte over", []CacheUse{{b + 1, 1}}, b, []CacheShrink{{0, 75 * mib}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := PlanCacheBudget(c.uses, c.budget, nil, nil)
			if !slices.Equal(got, c.want) {
				t.Fatalf("PlanCacheBudget(%v, %d) = %v, want %v", c.uses, c.budget, got, c.want)
			}
			var after int64
			for _, u := range c.uses {
				after += u.Cached
			}
			for _, s := range got {
				after -= c.uses[s.Index].Cached - s.Keep
			}
			if len(got) > 0 && after != CacheBudgetLow(c.budget) {
				t.Fatalf("after the shrinks %d bytes stay cached, want %d", after, CacheBudgetLow(c.budget))
			}
		})
	}
}

// TestPlanCacheBudgetAppends: the shrinks are appended to dst, and the
// order scratch is reused.
func TestPlanCacheBudgetAppends(t *testing.T) {
	dst := []CacheShrink{{7, 7}}
	order := make([]int, 0, 8)
	got, order2 := PlanCacheBudget([]CacheUse{{2, 1}, {4, 2}}, 4, order, dst)
	if want := []CacheShrink{{7, 7}, {0, 0}, {1, 3}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if cap(order2) != 8 {
		t.Fatalf("order scratch reallocated: cap %d", cap(order2))
	}
}

// TestDropCacheToKeepsNewest: on the in-memory FS (which panics under
// -tags invariants at advice over unsynced bytes), DropCacheTo advises out
// every durable byte but the newest keep, with no least step; CachedBytes
// follows; unsynced bytes stay; a keep at or above the window does nothing.
func TestDropCacheToKeepsNewest(t *testing.T) {
	fs := vfs.NewMem()
	opts := quietOptions()
	opts.PageCacheWindow = 4 * mib
	l, err := Open(fs, "/p", dropTestConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBytes(t, l, 3*mib, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := l.DropCache(); n != 0 {
		t.Fatalf("DropCache under the window advised %d", n)
	}
	synced := segmentBytes(t, l)["/p/00000000000000000000.log"]
	if got := l.CachedBytes(); got != synced {
		t.Fatalf("CachedBytes = %d, want the %d durable bytes", got, synced)
	}
	if n := l.DropCacheTo(4 * mib); n != 0 {
		t.Fatalf("DropCacheTo(window) advised %d", n)
	}
	if n := l.DropCacheTo(40 * mib); n != 0 {
		t.Fatalf("DropCacheTo(above the window) advised %d", n)
	}
	// Below the least step of DropCache (1 MiB), still dropped.
	keep := synced - 100<<10
	if n := l.DropCacheTo(keep); n != synced-keep {
		t.Fatalf("DropCacheTo(%d) advised %d, want %d", keep, n, synced-keep)
	}
	if got := l.CachedBytes(); got != keep {
		t.Fatalf("CachedBytes = %d, want %d", got, keep)
	}
	// Unsynced bytes are never advised out, nor counted.
	appendBytes(t, l, 1*mib, 2)
	if n := l.DropCacheTo(0); n != keep {
		t.Fatalf("DropCacheTo(0) advised %d, want the %d durable bytes left", n, keep)
	}
	if got := l.CachedBytes(); got != 0 {
		t.Fatalf("CachedBytes = %d after dropping everything durable", got)
	}
	fs.CacheDrops()
	if n := l.DropCacheTo(0); n != 0 {
		t.Fatalf("a second DropCacheTo(0) advised %d", n)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := l.DropCacheTo(0); n == 0 || l.CachedBytes() != 0 {
		t.Fatalf("after a Sync, DropCacheTo(0) advised %d and left %d", n, l.CachedBytes())
	}
}

// TestDropCacheToWithoutWindow: a log opened without a window is outside
// any budget.
func TestDropCacheToWithoutWindow(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open(fs, "/p", dropTestConfig(), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBytes(t, l, 2*mib, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := l.DropCacheTo(0); n != 0 || l.CachedBytes() != 0 {
		t.Fatalf("DropCacheTo(0) without a window advised %d, CachedBytes %d", n, l.CachedBytes())
	}
}

// TestCacheLedger: writes order the entries, a shrink keeps a log's place
// in that order and does not bring back a forgotten log, a log with
// nothing cached leaves the ledger, and Plan names logs by key after
// removals have moved them.
func TestCacheLedger(t *testing.T) {
	var c CacheLedger[string]
	c.Written("a", 40*mib)
	c.Written("b", 40*mib)
	c.Written("c", 40*mib)
	if c.Total() != 120*mib {
		t.Fatalf("total %d, want 120 MiB", c.Total())
	}
	c.Written("a", 40*mib) // a is now the newest
	c.Forget("b")          // c moves into b's place
	c.Shrunk("b", 10*mib)  // forgotten: stays out
	if _, ok := c.Cached("b"); ok || c.Total() != 80*mib {
		t.Fatalf("b back in the ledger or total %d, want 80 MiB", c.Total())
	}
	// 80 over a budget of 60: down to 45, from c (written before a).
	got := c.Plan(60*mib, nil)
	if want := []KeyedShrink[string]{{"c", 5 * mib}}; !slices.Equal(got, want) {
		t.Fatalf("Plan = %v, want %v", got, want)
	}
	c.Shrunk("c", 5*mib)
	c.Written("c", 0) // nothing cached: out
	if n, ok := c.Cached("a"); !ok || n != 40*mib || c.Total() != 40*mib {
		t.Fatalf("a %d (%v), total %d: want 40 MiB each", n, ok, c.Total())
	}
	if _, ok := c.Cached("c"); ok {
		t.Fatal("a log with nothing cached kept its entry")
	}
	if got := c.Plan(60*mib, nil); len(got) != 0 {
		t.Fatalf("Plan under the budget = %v", got)
	}
}
