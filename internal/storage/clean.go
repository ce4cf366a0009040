package storage

import (
	"errors"
	"fmt"
	"math"
)

// Log compaction (cleanup.policy=compact), as Kafka's log cleaner does it:
//
//   - Only sealed segments wholly below CleanParams.UpTo (the high
//     watermark: nothing that a truncation could still remove) are
//     cleanable, and none younger than min.compaction.lag.ms, nor any
//     after one that is. The active segment never is.
//   - The cleaner checkpoint splits the cleanable part into a clean head
//     (already compacted) and a dirty tail. A pass runs when dirty bytes /
//     cleanable bytes reach min.cleanable.dirty.ratio (or max.compaction.lag.ms
//     has passed, or a tombstone an earlier pass kept reached its delete
//     horizon, or Force). Files: clean_map.go reads, clean_filter.go
//     decides per batch, clean_write.go writes, clean_swap.go swaps.
//   - The dirty segments are read into an OffsetMap (key -> latest
//     offset), as many whole segments as the map's memory holds; then every
//     cleanable segment up to the last mapped one is rewritten keeping a
//     record only if no later record of its key is in the map. Records
//     without a key are dropped (a compacted topic refuses them).
//   - Tombstones (null values) survive their first cleaning; that pass
//     stamps their batch with a delete horizon (now + delete.retention.ms,
//     KIP-534: attribute bit 0x40, kept in the base timestamp), and a later
//     pass past the horizon drops them.
//   - Batches keep their offset range, leader epoch and producer fields; a
//     filtered batch is rewritten uncompressed with its surviving records
//     (original offsets and timestamps). The last batch of each producer
//     is kept, empty if need be, so the producer's sequence state survives a
//     rebuild from the log (Kafka's KAFKA-5443 rule).
//   - Records of aborted transactions (the aborted-transaction index names
//     them) are removed and never enter the map, so an aborted write never
//     hides an older committed value of its key. A transaction marker is
//     kept while any batch of its transaction is; then, as in Kafka, it
//     gets a delete horizon (delete.retention.ms) and a later pass removes
//     it with its aborted-transaction index entry (clean_filter.go,
//     marker). The caller bounds the pass by the last stable offset, so no
//     transaction still open is touched.
//   - Adjacent segments are merged while the sources fit in segment.bytes.
//     Each merged group replaces its sources atomically (clean_swap.go).
//
// Offsets never change; reads of a removed offset return the next
// surviving batch; the log start offset and the leader-epoch cache are not
// touched.

// maxCleanBatchBytes bounds the decompressed size of one batch the cleaner
// opens; a larger batch is kept as it is.
const maxCleanBatchBytes = 64 << 20

// cleanWriteChunk is how much cleaned output is buffered per write.
const cleanWriteChunk = 1 << 20

// CleanParams are the inputs of one compaction pass.
type CleanParams struct {
	NowMs int64
	// UpTo: only segments whose offsets are all below it are cleaned. The
	// caller passes its last stable offset (at most the high watermark):
	// an open transaction's records must not be cleaned before its
	// outcome is known.
	UpTo int64
	// Force cleans whatever min.cleanable.dirty.ratio says.
	Force bool
}

// CleanResult says what a pass did.
type CleanResult struct {
	Cleaned          bool    // false: nothing was due
	DirtyRatio       float64 // before the pass
	SegmentsBefore   int     // segments rewritten
	SegmentsAfter    int     // segments they became
	BytesBefore      int64
	BytesAfter       int64
	RecordsRemoved   int64
	TombstonesKept   int64 // tombstones still inside their delete horizon
	CleanedTo        int64 // the new cleaner checkpoint
	MapFull          bool  // the offset map stopped the pass early
	BatchesUncleaned int64 // batches kept as they were because they could not be opened
	MarkersRemoved   int64 // transaction markers whose transaction was gone and whose horizon passed
}

// errLogChanged aborts a pass whose segments were removed or replaced
// meanwhile (retention, truncation, close); the next pass starts over.
var errLogChanged = errors.New("log changed during compaction")

// cleanPlan is what a pass works on, captured under the lock.
type cleanPlan struct {
	segs       []*segment // cleanable segments, in order
	ends       []int64    // ends[i]: base of the segment after segs[i]
	sizes      []int64
	firstDirty int        // index in segs of the first dirty segment
	tail       []*segment // segments after segs, for producer last batches
	tailSizes  []int64
	upTo       int64
	cfg        Config
	ratio      float64
	due        bool
	// aborted holds the log's aborted transactions by producer: their
	// records are removed and never supersede older records of a key.
	aborted abortedRanges
}

// abortedRanges are aborted transactions by producer id.
type abortedRanges map[int64][]AbortedTxn

// holds reports whether transactional batch h belongs to an aborted
// transaction: one of its producer's aborted ranges holds its offsets.
func (a abortedRanges) holds(h batchInfo) bool {
	if !h.transactional {
		return false
	}
	for _, t := range a[h.producerID] {
		if t.FirstOffset <= h.base && h.base <= t.LastOffset {
			return true
		}
	}
	return false
}

// batchInfo is what abortedRanges needs of a batch header.
type batchInfo struct {
	producerID    int64
	base          int64
	transactional bool
}

// Clean runs one compaction pass; see the comment above. m is the pass's
// memory. It may run alongside appends and reads; it holds the log's lock
// only to plan and to swap each cleaned segment in.
func (l *Log) Clean(p CleanParams, m *OffsetMap) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	plan, err := l.planClean(p)
	if err != nil || !plan.due {
		return CleanResult{DirtyRatio: plan.ratio}, err
	}
	res := CleanResult{DirtyRatio: plan.ratio}
	mapped, err := l.buildOffsetMap(plan, m, &res)
	if err != nil {
		return res, l.changedOr(plan, err)
	}
	lastBatches, err := producerLastBatches(plan)
	if err != nil {
		return res, l.changedOr(plan, err)
	}
	f := filter{m: m, aborted: plan.aborted,
		abortedSeen: map[int64]bool{}, committedSeen: map[int64]bool{}, removedMarkers: map[int64]bool{}, nowMs: p.NowMs, deleteRetentionMs: plan.cfg.DeleteRetentionMs, lastBatches: lastBatches, res: &res, nextHorizon: math.MaxInt64}
	for _, g := range groupSegments(plan, mapped) {
		if err := l.cleanGroup(plan, g, &f); err != nil {
			return res, l.changedOr(plan, err)
		}
	}
	res.Cleaned = true
	res.CleanedTo = plan.ends[mapped-1]
	l.mu.Lock()
	l.tombstoneHorizon = f.nextHorizon
	if res.CleanedTo > l.cleanedTo {
		l.cleanedTo = res.CleanedTo
		if err := writeOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile, res.CleanedTo); err != nil {
			// Only costs re-cleaning the same data next time.
			l.logger.Warn("cleaner checkpoint not saved", "dir", l.dir, "err", err)
		}
	}
	l.unlock()
	return res, nil
}

// changedOr reports errLogChanged when the planned segments are no longer
// all in the log (their files may have been closed under the pass), else
// err.
func (l *Log) changedOr(plan cleanPlan, err error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.indexOfSegment(plan.segs[0]) < 0 {
		return fmt.Errorf("%w: %s: %w", errLogChanged, l.dir, err)
	}
	return fmt.Errorf("clean %s: %w", l.dir, err)
}

// IsLogChanged reports a pass abandoned because retention, truncation or
// Close removed what it was cleaning.
func IsLogChanged(err error) bool { return errors.Is(err, errLogChanged) }

func (l *Log) indexOfSegment(s *segment) int {
	for i, x := range l.segments {
		if x == s {
			return i
		}
	}
	return -1
}

// planClean picks the cleanable segments and decides whether a pass is due.
func (l *Log) planClean(p CleanParams) (cleanPlan, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.usableLocked(); err != nil {
		return cleanPlan{}, err
	}
	plan := cleanPlan{cfg: l.cfg, upTo: p.UpTo, aborted: abortedRanges{}}
	for _, s := range l.segments {
		for _, a := range s.aborted {
			plan.aborted[a.ProducerID] = append(plan.aborted[a.ProducerID], a)
		}
	}
	unsynced := map[*segment]bool{}
	for _, s := range l.unsynced {
		unsynced[s] = true
	}
	for i := 0; i < len(l.segments)-1; i++ {
		s, end := l.segments[i], l.segments[i+1].base
		young := l.cfg.MinCompactionLagMs > 0 && s.maxTimestamp > p.NowMs-l.cfg.MinCompactionLagMs
		if end > p.UpTo || unsynced[s] || young {
			break
		}
		plan.segs = append(plan.segs, s)
		plan.ends = append(plan.ends, end)
		plan.sizes = append(plan.sizes, s.size)
	}
	for _, s := range l.segments[len(plan.segs):] {
		plan.tail = append(plan.tail, s)
		plan.tailSizes = append(plan.tailSizes, s.size)
	}
	firstDirty := max(l.cleanedTo, l.logStart)
	plan.firstDirty = len(plan.segs)
	var dirty, total int64
	for i, s := range plan.segs {
		total += s.size
		if plan.ends[i] > firstDirty {
			dirty += s.size
			plan.firstDirty = min(plan.firstDirty, i)
		}
	}
	if len(plan.segs) == 0 {
		return plan, nil
	}
	if plan.firstDirty == len(plan.segs) {
		// Nothing dirty: rewrite the clean part only to drop tombstones
		// whose delete horizon passed.
		plan.due = p.Force || l.tombstoneHorizon <= p.NowMs
		return plan, nil
	}
	if total > 0 {
		plan.ratio = float64(dirty) / float64(total)
	}
	first := plan.segs[plan.firstDirty]
	overdue := l.cfg.MaxCompactionLagMs > 0 && first.rollStartMs >= 0 && p.NowMs-first.rollStartMs > l.cfg.MaxCompactionLagMs
	plan.due = p.Force || overdue || (dirty > 0 && plan.ratio >= l.cfg.MinCleanableDirtyRatio)
	return plan, nil
}
