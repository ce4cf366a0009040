package storage

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// UndefinedEpoch and UndefinedOffset are Kafka's "unknown" answers of
// OffsetForLeaderEpoch (-1, -1).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EpochCache is the leader-epoch cache of a partition (Kafka's
// LeaderEpochFileCache): an ordered list of (epoch, start offset) with both
// columns strictly increasing. Followers use it to find where their log
// diverges from the leader's (KIP-101, KIP-279).
//
// The logic here is pure; when persist is set, every change is handed to it
// before the method returns, so the checkpoint on disk never lags a change
// the caller has been told about. Methods are safe for concurrent use.
type EpochCache struct {
	mu      sync.Mutex
	entries []EpochEntry
	// latest is the last entry's epoch, UndefinedEpoch when there is none,
	// published at every change of entries (under mu) and read without
	// it: every idle replica fetcher round asks each of its partitions.
	// It lives in own, or where publishTo moved it: the log keeps it
	// beside its published bounds (Log.LatestEpoch), so a follower's
	// round reads a partition's fetch state from one cache line instead
	// of two.
	latest  *atomic.Int32
	own     atomic.Int32
	persist func([]EpochEntry) error // nil: memory only
}

// NewEpochCache returns a cache holding entries (which must be strictly
// increasing in both columns) that calls persist after every change.
func NewEpochCache(entries []EpochEntry, persist func([]EpochEntry) error) (*EpochCache, error) {
	if err := checkEpochEntries(entries); err != nil {
		return nil, err
	}
	c := &EpochCache{entries: slices.Clone(entries), persist: persist}
	c.latest = &c.own
	c.publish()
	return c, nil
}

func checkEpochEntries(entries []EpochEntry) error {
	for i, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("epoch entry %d (%d at %d): negative", i, e.Epoch, e.StartOffset)
		}
		if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			return fmt.Errorf("epoch entry %d (%d at %d) does not follow (%d at %d)",
				i, e.Epoch, e.StartOffset, entries[i-1].Epoch, entries[i-1].StartOffset)
		}
	}
	return nil
}

// Entries returns a copy of the cache contents.
func (c *EpochCache) Entries() []EpochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.entries)
}

// Latest returns the newest epoch.
func (c *EpochCache) Latest() (epoch int32, ok bool) {
	epoch = c.latest.Load()
	return epoch, epoch != UndefinedEpoch
}

// publish stores the latest epoch for Latest. Callers hold c.mu (or own
// c alone).
func (c *EpochCache) publish() {
	latest := UndefinedEpoch
	if n := len(c.entries); n > 0 {
		latest = c.entries[n-1].Epoch
	}
	c.latest.Store(latest)
}

// publishTo moves where the latest epoch is published to m, from now
// on. Only before c is shared: Latest reads the pointer without a lock.
func (c *EpochCache) publishTo(m *atomic.Int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest = m
	c.publish()
}

// Assign records that epoch starts at startOffset. As in Kafka, it is a
// no-op when epoch is already the latest with an equal or earlier start, and
// otherwise first removes every entry that would break monotonicity (epochs
// >= epoch or start offsets >= startOffset).
func (c *EpochCache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("assign leader epoch %d at offset %d: negative", epoch, startOffset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.Epoch == epoch && last.StartOffset <= startOffset {
			return nil
		}
	}
	kept := c.entries[:0:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	kept = append(kept, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return c.replace(kept)
}

// EndOffsetFor answers OffsetForLeaderEpoch with Kafka's semantics
// (LeaderEpochFileCache.endOffsetFor):
//   - the latest epoch ends at logEnd;
//   - an older known epoch ends where the next higher epoch starts, and the
//     answer names the largest known epoch <= requested (requests for an
//     epoch the cache skipped get the one before it);
//   - an epoch below the first entry gets (requested, first start offset):
//     the data before it is gone, replicate from there;
//   - an epoch above the latest, an empty cache, or -1 give (-1, -1).
func (c *EpochCache) EndOffsetFor(requested int32, logEnd int64) (epoch int32, endOffset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if requested == UndefinedEpoch || n == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if c.entries[n-1].Epoch == requested {
		return requested, logEnd
	}
	// higher: the first entry with an epoch above the requested one.
	higher, _ := slices.BinarySearchFunc(c.entries, requested, func(e EpochEntry, t int32) int {
		if e.Epoch <= t {
			return -1
		}
		return 1
	})
	if higher == n {
		return UndefinedEpoch, UndefinedOffset
	}
	if higher == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// TruncateFromEnd removes the entries starting at or after endOffset (the
// log was truncated to endOffset).
func (c *EpochCache) TruncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if endOffset < 0 || n == 0 || c.entries[n-1].StartOffset < endOffset {
		return nil
	}
	kept := slices.Clone(c.entries)
	for len(kept) > 0 && kept[len(kept)-1].StartOffset >= endOffset {
		kept = kept[:len(kept)-1]
	}
	return c.replace(kept)
}

// TruncateFromStart drops the entries wholly before startOffset (the log
// start moved there): the last entry starting at or before it is kept and
// moved to start at startOffset.
func (c *EpochCache) TruncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if startOffset < 0 || len(c.entries) == 0 || c.entries[0].StartOffset >= startOffset {
		return nil
	}
	lastBefore := 0
	for i, e := range c.entries {
		if e.StartOffset <= startOffset {
			lastBefore = i
		}
	}
	kept := slices.Clone(c.entries[lastBefore:])
	kept[0].StartOffset = startOffset
	return c.replace(kept)
}

// Clear removes every entry (the log was emptied and restarted).
func (c *EpochCache) Clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return nil
	}
	return c.replace(nil)
}

// replace persists then installs entries. If persisting fails the memory
// copy is still updated: the on-disk checkpoint is behind, which recovery
// repairs (it truncates the cache to the log), while the log itself already
// reflects the change. Callers hold c.mu.
func (c *EpochCache) replace(entries []EpochEntry) error {
	c.entries = entries
	c.publish()
	if c.persist == nil {
		return nil
	}
	if err := c.persist(slices.Clone(entries)); err != nil {
		return fmt.Errorf("persist leader epoch cache: %w", err)
	}
	return nil
}

// takeOver makes c hold other's entries and persist them as other does:
// a moved log keeps the cache object its replica holds (move.go).
func (c *EpochCache) takeOver(other *EpochCache) {
	other.mu.Lock()
	entries, persist := slices.Clone(other.entries), other.persist
	other.mu.Unlock()
	c.mu.Lock()
	c.entries, c.persist = entries, persist
	c.publish()
	c.mu.Unlock()
}
