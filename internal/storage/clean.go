package storage

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
	"github.com/skein-log/skein/internal/vfs"
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
//     has passed, or Force).
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
	// caller passes its high watermark.
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
	f := filter{m: m, nowMs: p.NowMs, deleteRetentionMs: plan.cfg.DeleteRetentionMs, lastBatches: lastBatches, res: &res, nextHorizon: math.MaxInt64}
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
	l.mu.Unlock()
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

// ErrLogChanged reports a pass abandoned because retention, truncation or
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
	plan := cleanPlan{cfg: l.cfg, upTo: p.UpTo}
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

// buildOffsetMap reads the dirty segments into m, as many whole segments as
// fit, and returns how many planned segments the pass may rewrite (up to
// and including the last mapped one).
func (l *Log) buildOffsetMap(plan cleanPlan, m *OffsetMap, res *CleanResult) (int, error) {
	counts := make([]int64, len(plan.segs))
	var total int64
	for i := plan.firstDirty; i < len(plan.segs); i++ {
		n, err := countRecords(plan.segs[i], plan.sizes[i])
		if err != nil {
			return 0, err
		}
		counts[i] = n
		total += n
	}
	m.reset(int(min(total, math.MaxInt32)))
	mapped := plan.firstDirty
	for i := plan.firstDirty; i < len(plan.segs); i++ {
		if i > plan.firstDirty && int64(m.used)+counts[i] > int64(m.MaxEntries()) {
			res.MapFull = true
			break // this segment might not fit: leave it for the next pass
		}
		full, err := mapSegment(plan.segs[i], plan.sizes[i], m, res)
		if err != nil {
			return 0, err
		}
		if full {
			return 0, fmt.Errorf("segment %d holds more keys than the offset map's %d (raise log.cleaner.dedupe.buffer.size)", plan.segs[i].base, m.MaxEntries())
		}
		mapped = i + 1
	}
	return mapped, nil
}

// countRecords adds up the record counts of a segment's batch headers.
func countRecords(s *segment, size int64) (int64, error) {
	var n int64
	sc := newScanner(s.file, 0, size, false)
	for {
		h, _, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("count records of %s: %w", s.logPath(), err)
		}
		n += int64(h.RecordCount)
	}
}

// mapSegment puts every keyed record of the segment into m. full reports a
// key that did not fit.
func mapSegment(s *segment, size int64, m *OffsetMap, res *CleanResult) (full bool, err error) {
	sc := newScanner(s.file, 0, size, true)
	for {
		h, _, data, err := sc.next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("map %s: %w", s.logPath(), err)
		}
		if h.IsControl() {
			continue
		}
		_, recs, err := records.Decode(data, maxCleanBatchBytes)
		if err != nil {
			// Its keys stay unknown, so their older records are kept:
			// the safe direction.
			res.BatchesUncleaned++
			continue
		}
		for _, r := range recs {
			if r.Key != nil && !m.put(r.Key, r.Offset(h)) {
				return true, nil
			}
		}
	}
}

// producerLastBatches finds, for every producer id, the last offset of its
// last batch below plan.upTo (batches below the high watermark are never
// truncated, so this cannot go stale).
func producerLastBatches(plan cleanPlan) (map[int64]int64, error) {
	last := map[int64]int64{}
	scan := func(s *segment, size int64) error {
		sc := newScanner(s.file, 0, size, false)
		for {
			h, _, _, err := sc.next()
			if errors.Is(err, io.EOF) || (err == nil && h.LastOffset() >= plan.upTo) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("scan producers of %s: %w", s.logPath(), err)
			}
			if h.HasProducerID() {
				last[h.ProducerID] = h.LastOffset()
			}
		}
	}
	for i, s := range plan.segs {
		if err := scan(s, plan.sizes[i]); err != nil {
			return nil, err
		}
	}
	for i, s := range plan.tail {
		if s.base >= plan.upTo {
			break
		}
		if err := scan(s, plan.tailSizes[i]); err != nil {
			return nil, err
		}
	}
	return last, nil
}

// groupSegments splits the first n planned segments into runs that are
// cleaned into one segment each: adjacent segments whose sizes add up to at
// most segment.bytes, whose indexes fit segment.index.bytes and whose
// offsets fit the 32-bit relative index fields (Kafka's grouping).
func groupSegments(plan cleanPlan, n int) [][2]int {
	var groups [][2]int
	for i := 0; i < n; {
		j := i + 1
		size, idx := plan.sizes[i], int64(len(plan.segs[i].index.entries))
		for j < n {
			nextSize := size + plan.sizes[j]
			nextIdx := idx + int64(len(plan.segs[j].index.entries))
			if nextSize > plan.cfg.SegmentBytes || nextIdx*timeIndexEntrySize > int64(plan.cfg.MaxIndexBytes) ||
				plan.ends[j]-1-plan.segs[i].base > math.MaxInt32 {
				break
			}
			size, idx = nextSize, nextIdx
			j++
		}
		groups = append(groups, [2]int{i, j})
		i = j
	}
	return groups
}

// cleanGroup writes the cleaned form of plan.segs[g[0]:g[1]] and swaps it
// in.
func (l *Log) cleanGroup(plan cleanPlan, g [2]int, f *filter) error {
	srcs := plan.segs[g[0]:g[1]]
	base := srcs[0].base
	path := segmentFileName(l.dir, base, logSuffix+cleanedSuffix)
	file, err := vfs.Create(l.fs, path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	out := newSegmentState(l.dir, base, file)
	discard := func(err error) error {
		file.Close()
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if rerr := removeIfExists(l.fs, segmentFileName(l.dir, base, suffix+cleanedSuffix)); rerr != nil {
				l.logger.Warn("leftover cleaned segment file", "err", rerr)
			}
		}
		return err
	}
	w := cleanWriter{out: out, interval: plan.cfg.IndexIntervalBytes}
	var before int64
	for k, s := range srcs {
		size := plan.sizes[g[0]+k]
		before += size
		if err := f.segment(s, size, &w); err != nil {
			return discard(err)
		}
	}
	if err := w.flush(); err != nil {
		return discard(err)
	}
	if err := file.Sync(); err != nil {
		return discard(fmt.Errorf("fsync %s: %w", path, err))
	}
	out.sealTimeIndex()
	if err := writeCleanedIndexes(l.fs, out); err != nil {
		return discard(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return discard(fmt.Errorf("sync dir %s: %w", l.dir, err))
	}

	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	at := l.indexOfSegment(srcs[0])
	if l.closed || l.failed != nil || at < 0 || at+len(srcs) >= len(l.segments) {
		return discard(errLogChanged)
	}
	for k, s := range srcs {
		if l.segments[at+k] != s || s.size != plan.sizes[g[0]+k] {
			return discard(errLogChanged)
		}
	}
	if err := l.swapLocked(at, srcs, out); err != nil {
		if l.failed == nil {
			return discard(err)
		}
		return err
	}
	f.res.SegmentsBefore += len(srcs)
	f.res.SegmentsAfter++
	f.res.BytesBefore += before
	f.res.BytesAfter += out.size
	l.logger.Info("compacted segments", "dir", l.dir, "base", base, "segments", len(srcs), "bytes_before", before, "bytes_after", out.size)
	return nil
}

// cleanWriter appends cleaned batches to the output segment, tracking its
// indexes as an append would.
type cleanWriter struct {
	out      *segment
	interval int
	buf      []byte
	bufFrom  int64 // file position of buf[0]
}

func (w *cleanWriter) write(b []byte, h *batch.Header) error {
	pos := w.out.size
	if pos+int64(len(b)) > maxSegmentBytes {
		return fmt.Errorf("cleaned segment %s would pass %d bytes", w.out.logPath(), maxSegmentBytes)
	}
	if len(w.buf) == 0 {
		w.bufFrom = pos
	}
	w.buf = append(w.buf, b...)
	w.out.track(h, pos, w.interval, h.MaxTimestamp)
	if len(w.buf) >= cleanWriteChunk {
		return w.flush()
	}
	return nil
}

func (w *cleanWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.out.file.WriteAt(w.buf, w.bufFrom); err != nil {
		return fmt.Errorf("write %s: %w", w.out.file.Name(), err)
	}
	w.buf = w.buf[:0]
	return nil
}

// writeCleanedIndexes writes and fsyncs the .cleaned index files of a
// cleaned segment, so that once swapped in they are as trustworthy as those
// of a segment sealed by a roll and a Sync.
func writeCleanedIndexes(fs vfs.FS, out *segment) error {
	for _, f := range []struct {
		suffix string
		data   []byte
	}{{indexSuffix, out.index.encode()}, {timeIndexSuffix, out.timeIndex.encode()}} {
		path := segmentFileName(out.dir, out.base, f.suffix+cleanedSuffix)
		file, err := vfs.Create(fs, path)
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		_, err = file.WriteAt(f.data, 0)
		if err == nil {
			err = file.Sync()
		}
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
