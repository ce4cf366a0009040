package node

import (
	"sort"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/storage"
)

// logCleaner compacts the partition replicas of topics with
// cleanup.policy=compact (and compact,delete) on this broker, leaders and
// followers alike, each on its own: offsets never change, so a follower
// that fetches from a compacted leader and one that compacts itself hold
// the same records at the same offsets. One goroutine runs a pass every
// log.cleaner.backoff.ms; each partition's pass is bounded by the offset
// map (log.cleaner.dedupe.buffer.size), which all passes share.
type logCleaner struct {
	b  *Broker
	mu sync.Mutex // serialises passes (the timer's and CleanLogs')
	m  *storage.OffsetMap
}

func newLogCleaner(b *Broker) *logCleaner {
	return &logCleaner{b: b, m: storage.NewOffsetMap(max(b.cfg.LogCleanerDedupeBufferSize, 1<<20))}
}

// start runs passes on a timer until the broker stops.
func (c *logCleaner) start() {
	if !c.b.cfg.LogCleanerEnable {
		return
	}
	interval := c.b.cfg.LogCleanerBackoff
	if interval <= 0 {
		interval = 15 * time.Second
	}
	c.b.bgWG.Add(1)
	go func() {
		defer c.b.bgWG.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-c.b.stop:
				return
			case now := <-t.C:
				c.pass(now, false)
			}
		}
	}()
}

// pass cleans every compacted partition replica that is due, the dirtiest
// first, and returns how many it compacted. force ignores
// min.cleanable.dirty.ratio.
func (c *logCleaner) pass(now time.Time, force bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []*partition
	for _, p := range c.b.partitionList() {
		p.mu.Lock()
		compact := p.core.Config().Compact() && !p.core.Closed()
		p.mu.Unlock()
		if compact {
			parts = append(parts, p)
		}
	}
	// Stable order: by name, so that a bounded pass is predictable.
	sort.Slice(parts, func(i, j int) bool { return parts[i].name() < parts[j].name() })
	cleaned := 0
	for _, p := range parts {
		select {
		case <-c.b.stop:
			return cleaned
		default:
		}
		// Only what every in-sync replica holds durably: a truncation
		// can never remove it, so no record is ever compacted away in
		// favour of a later one that is then lost.
		// Below the last stable offset too: an open transaction's records
		// wait for its outcome (aborted ones are removed).
		upTo := min(p.lastStable.Load(), p.log.DurableEndOffset())
		res, err := p.log.Clean(storage.CleanParams{NowMs: now.UnixMilli(), UpTo: upTo, Force: force}, c.m)
		switch {
		case storage.IsLogChanged(err):
			c.b.logger(loggerLogCleaner).Debug("compaction pass abandoned; the log changed", "partition", p.name(), "err", err)
		case err != nil:
			c.b.logger(loggerLogCleaner).Warn("compaction failed", "partition", p.name(), "err", err)
		case res.Cleaned:
			cleaned++
			c.b.metrics.ObserveCompaction(res.BytesBefore, res.BytesAfter)
			c.b.logger(loggerLogCleaner).Info("compacted partition", "partition", p.name(), "dirty_ratio", res.DirtyRatio,
				"segments_before", res.SegmentsBefore, "segments_after", res.SegmentsAfter,
				"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter,
				"records_removed", res.RecordsRemoved, "cleaned_to", res.CleanedTo, "offset_map_full", res.MapFull)
		}
	}
	return cleaned
}

// CleanLogs runs one log cleaner pass now over every compacted partition
// replica of this broker, ignoring min.cleanable.dirty.ratio when force is
// set, and returns how many partitions it compacted. Tests and operators
// use it to compact without waiting for log.cleaner.backoff.ms; it works
// whether or not log.cleaner.enable is set.
func (b *Broker) CleanLogs(force bool) int {
	return b.cleaner.pass(time.Now(), force)
}
