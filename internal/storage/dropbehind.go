package storage

import "github.com/skein-log/skein/internal/vfs"

// Drop-behind: a log keeps only the newest Options.PageCacheWindow bytes of
// its durable data in the page cache and advises the older bytes out
// (POSIX_FADV_DONTNEED), so a producing broker's page cache stays bounded
// and the kernel reuses the freed pages for the next writes instead of
// faulting in new ones (on a VM that reports free pages to its host, each
// new page costs a wait for the host inside pwrite's copy; see
// docs/performance.md). Only durable bytes are advised out: DONTNEED on a
// dirty page starts its writeback instead of dropping it. Data a Sync never
// covered (write.caching=true between flushes) is never advised out.
//
// The decision (planCacheDrop) is pure; Log.DropCache gathers its inputs
// and carries it out.

// cacheMark is how far the log has been advised out: every byte before
// position pos of the segment based at base, and every segment based
// below base. The zero value is "nothing" (an Open, a log restarted empty).
type cacheMark struct{ base, pos int64 }

// truncatedTo is m after the log was cut to size bytes of its segment at
// base (Truncate): bytes written there later are new and not advised out.
func (m cacheMark) truncatedTo(base, size int64) cacheMark {
	switch {
	case m.base > base:
		return cacheMark{base, size}
	case m.base == base:
		return cacheMark{base, min(m.pos, size)}
	}
	return m
}

// cacheExtent is the durable part of one segment: its bytes [0, size).
type cacheExtent struct{ base, size int64 }

// cacheDrop is one range to advise out: bytes [off, off+n) of the segment
// extents[seg] of planCacheDrop's input.
type cacheDrop struct {
	seg    int
	off, n int64
}

// minCacheDropStep is the least a drop advises out (unless it finishes a
// rolled segment), so a busy partition does not call fadvise at every fsync.
const minCacheDropStep = 1 << 20

// cacheDropStep is how many bytes must have left the window before the
// next drop: a quarter of it, at least minCacheDropStep. So the page cache
// holds at most window + step bytes of a log's durable data.
func cacheDropStep(window int64) int64 { return max(window/4, minCacheDropStep) }

// planCacheDrop decides which byte ranges to advise out now. mark is what
// was advised out before; extents are the log's segments, in base order,
// with their durable sizes (a segment with nothing durable has size 0);
// window is Options.PageCacheWindow (≤ 0: never drop). Everything durable
// except the newest window bytes (counted back over the segments) may go.
// It drops when at least cacheDropStep(window) bytes may go, or when a
// whole rolled segment lies outside the window with bytes still cached
// (its file is finished: nothing will be written to it). It appends the
// ranges to dst and returns them with the new mark (mark itself when there
// is nothing to do). Pure: no lock, no clock.
func planCacheDrop(mark cacheMark, extents []cacheExtent, window int64, dst []cacheDrop) ([]cacheDrop, cacheMark) {
	if window <= 0 {
		return dst, mark
	}
	return planCacheDropStep(mark, extents, window, cacheDropStep(window), dst)
}

// planCacheDropStep is planCacheDrop with the window's least drop given:
// it drops when at least step bytes may go (any, for a step ≤ 1) or a
// rolled segment is finished. A window of 0 keeps nothing: every durable
// byte may go (DropCacheTo, for a broker-wide budget).
func planCacheDropStep(mark cacheMark, extents []cacheExtent, window, step int64, dst []cacheDrop) ([]cacheDrop, cacheMark) {
	if window < 0 || len(extents) == 0 {
		return dst, mark
	}
	// The cut: the newest window bytes lie from it on.
	cutSeg, keep := -1, window
	for i := len(extents) - 1; i >= 0; i-- {
		if extents[i].size >= keep {
			cutSeg = i
			break
		}
		keep -= extents[i].size
	}
	if cutSeg < 0 {
		return dst, mark // less than a window is durable
	}
	cutPos := extents[cutSeg].size - keep
	var total int64
	finishesRolled := false
	first := len(dst)
	for i := 0; i <= cutSeg; i++ {
		e := extents[i]
		from, to := int64(0), e.size
		switch {
		case e.base < mark.base:
			continue // advised out before
		case e.base == mark.base:
			from = min(mark.pos, e.size)
		}
		if i == cutSeg {
			to = cutPos
		} else if to > from {
			finishesRolled = true
		}
		if to > from {
			dst = append(dst, cacheDrop{seg: i, off: from, n: to - from})
			total += to - from
		}
	}
	if total == 0 || total < step && !finishesRolled {
		return dst[:first], mark
	}
	return dst, cacheMark{extents[cutSeg].base, cutPos}
}

// DropCache advises the log's durable bytes outside its page-cache window
// out of the page cache (see planCacheDrop), and returns how many bytes it
// advised out. The flusher calls it after Sync has returned (and its
// answers are sent), so the fadvise is not on the ack path. A log opened
// without a window does nothing.
//
// It holds syncMu, not mu, across the fadvise calls: every operation that
// closes or replaces a segment's file (Truncate, DeleteBefore,
// EnforceRetention, a compaction's swap, a move's AdoptFuture, Close)
// holds syncMu too, so the files gathered under mu stay open, and are the
// same files, until DropCache returns; appends and reads go on meanwhile.
// A failed fadvise is only advice lost: it is logged, and does not fail
// the log. A closed or failed log does nothing.
func (l *Log) DropCache() (advised int64) {
	if l.cacheWindow <= 0 {
		return 0
	}
	return l.dropCache(l.cacheWindow, cacheDropStep(l.cacheWindow))
}

// DropCacheTo is DropCache with a smaller window, keep bytes (0: none),
// and no least step: it advises out every durable byte but the newest keep
// that is still cached (keep above the log's own window counts as that
// window). A broker bounding its partitions' page cache as a whole
// (log.page.cache.broker.bytes, PlanCacheBudget) calls it on the logs
// written least recently. A log opened without a window does nothing: the
// budget counts only logs with one.
func (l *Log) DropCacheTo(keep int64) (advised int64) {
	if l.cacheWindow <= 0 {
		return 0
	}
	return l.dropCache(min(max(keep, 0), l.cacheWindow), 0)
}

// CachedBytes is how many of the log's durable bytes the last DropCache
// or DropCacheTo left in the page cache (not advised out): what a
// broker-wide budget counts for this log. It is not re-counted between
// calls (a retention's deletion leaves it high until the next call).
func (l *Log) CachedBytes() int64 { return l.cachedBytes.Load() }

// dropCache carries out planCacheDropStep for window and step, and notes
// what stays cached (CachedBytes).
func (l *Log) dropCache(window, step int64) (advised int64) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.RLock()
	if l.usableLocked() != nil {
		l.mu.RUnlock()
		l.cachedBytes.Store(0)
		return 0
	}
	// The segments from the mark's on (the others were advised out
	// before); a segment's bytes are durable up to what the last Sync
	// covered (l.synced): all of a segment before it, the synced size of
	// it, nothing of a later one.
	extents, files := l.cacheExtents[:0], l.cacheFiles[:0]
	from := len(l.segments) - 1
	for from > 0 && l.segments[from].base > l.cacheMark.base {
		from--
	}
	for _, s := range l.segments[from:] {
		size := s.size
		switch {
		case s.base == l.synced.base:
			size = min(size, l.synced.size)
		case s.base > l.synced.base:
			size = 0
		}
		extents = append(extents, cacheExtent{s.base, size})
		files = append(files, s.file)
	}
	l.mu.RUnlock()
	drops, next := planCacheDropStep(l.cacheMark, extents, window, step, l.cacheDrops[:0])
	l.cacheExtents, l.cacheFiles, l.cacheDrops = extents, files, drops
	for _, d := range drops {
		if err := vfs.DropCache(files[d.seg], d.off, d.n); err != nil {
			l.logger.Warn("page cache drop failed", "dir", l.dir, "err", err)
			continue
		}
		advised += d.n
	}
	l.cacheMark = next
	l.cachedBytes.Store(cachedAfter(next, extents))
	clear(l.cacheFiles) // keep no file past the call: it may be closed next
	return advised
}

// cachedAfter is how many of extents' durable bytes lie at or after mark:
// the log's bytes not advised out.
func cachedAfter(mark cacheMark, extents []cacheExtent) (n int64) {
	for _, e := range extents {
		switch {
		case e.base < mark.base:
		case e.base == mark.base:
			n += max(e.size-mark.pos, 0)
		default:
			n += e.size
		}
	}
	return n
}
