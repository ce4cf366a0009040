package storage

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/skein-log/skein/internal/records"
)

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
		full, err := mapSegment(plan.segs[i], plan.sizes[i], m, plan.aborted, res)
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
func mapSegment(s *segment, size int64, m *OffsetMap, aborted abortedRanges, res *CleanResult) (full bool, err error) {
	sc := newScanner(s.file, 0, size, true)
	for {
		h, _, data, err := sc.next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("map %s: %w", s.logPath(), err)
		}
		if h.IsControl() || aborted.holds(infoOf(h)) {
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
