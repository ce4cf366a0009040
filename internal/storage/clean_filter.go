package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// filter decides, batch by batch, what a compaction pass keeps.
type filter struct {
	m       *OffsetMap
	aborted abortedRanges
	// The pass's transaction state (Kafka's CleanedTransactionMetadata):
	// abortedSeen[pid] says a batch of pid's aborted transaction was
	// traversed since its previous marker, committedSeen[pid] one of a
	// transaction that was not aborted; a marker is removable only when
	// its transaction had none. removedMarkers are the last offsets of
	// the markers this pass dropped, whose index entries go with them.
	abortedSeen, committedSeen map[int64]bool
	removedMarkers             map[int64]bool
	nowMs                      int64
	deleteRetentionMs          int64
	lastBatches                map[int64]int64 // producer id -> last offset of its last batch
	res                        *CleanResult
	nextHorizon                int64 // earliest delete horizon of a kept tombstone
}

// segment filters every batch of s into w.
func (f *filter) segment(s *segment, size int64, w *cleanWriter) error {
	sc := newScanner(s.file, 0, size, true)
	for {
		h, _, data, err := sc.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("clean %s: %w", s.logPath(), err)
		}
		out, err := f.batch(h, data)
		if err != nil {
			return fmt.Errorf("clean %s at offset %d: %w", s.logPath(), h.BaseOffset, err)
		}
		if out == nil {
			continue
		}
		oh, err := batch.ValidateStored(out)
		if err != nil { // a bug in building it; never write it
			return fmt.Errorf("cleaned batch at offset %d invalid: %w", h.BaseOffset, err)
		}
		if err := w.write(out, &oh); err != nil {
			return err
		}
	}
}

// batch returns what replaces one batch: data itself when nothing changes,
// a rebuilt batch, or nil when nothing of it survives.
func (f *filter) batch(h batch.Header, data []byte) ([]byte, error) {
	if h.IsControl() {
		return f.marker(h, data)
	}
	if h.IsTransactional() && !f.aborted.holds(infoOf(h)) {
		f.committedSeen[h.ProducerID] = true
	}
	if f.aborted.holds(infoOf(h)) {
		f.abortedSeen[h.ProducerID] = true
		f.res.RecordsRemoved += int64(h.RecordCount)
		if h.HasProducerID() && f.lastBatches[h.ProducerID] == h.LastOffset() {
			return f.rebuild(h, nil, false), nil // the producer's sequence state
		}
		return nil, nil
	}
	_, recs, err := records.Decode(data, maxCleanBatchBytes)
	if err != nil {
		f.res.BatchesUncleaned++
		return data, nil // keep what cannot be opened: never lose data over it
	}
	horizonPassed := h.HasDeleteHorizon() && f.nowMs >= h.BaseTimestamp
	kept := recs[:0:0]
	needsHorizon := false
	for _, r := range recs {
		switch {
		case r.Key == nil:
			// No key: nothing to compact it by; a compacted topic refuses
			// these at produce time, as Kafka's cleaner drops them.
		case f.superseded(r.Key, r.Offset(h)):
		case r.Value == nil && horizonPassed:
		default:
			if r.Value == nil {
				f.res.TombstonesKept++
				needsHorizon = needsHorizon || !h.HasDeleteHorizon()
			}
			kept = append(kept, r)
		}
	}
	f.res.RecordsRemoved += int64(len(recs) - len(kept))
	if len(kept) == len(recs) && !needsHorizon {
		if h.HasDeleteHorizon() && slices.ContainsFunc(kept, func(r records.Record) bool { return r.Value == nil }) {
			f.nextHorizon = min(f.nextHorizon, h.BaseTimestamp)
		}
		return data, nil
	}
	lastOfProducer := h.HasProducerID() && f.lastBatches[h.ProducerID] == h.LastOffset()
	if len(kept) == 0 && !lastOfProducer {
		return nil, nil
	}
	out := f.rebuild(h, kept, needsHorizon)
	if slices.ContainsFunc(kept, func(r records.Record) bool { return r.Value == nil }) {
		oh, _ := batch.ParseHeader(out)
		f.nextHorizon = min(f.nextHorizon, oh.BaseTimestamp)
	}
	return out, nil
}

// superseded reports whether a later record of the key is in the map.
func (f *filter) superseded(key []byte, offset int64) bool {
	latest, ok := f.m.get(key)
	return ok && offset < latest
}

// rebuild builds the uncompressed batch holding kept in h's offset range.
// A batch that gets a delete horizon carries it as its base timestamp; the
// records' timestamp deltas are re-based so their timestamps do not change.
func (f *filter) rebuild(h batch.Header, kept []records.Record, setHorizon bool) []byte {
	attrs := h.Attributes &^ batch.CompressionMask
	baseTs := h.BaseTimestamp
	if setHorizon {
		attrs |= batch.DeleteHorizonBit
		baseTs = f.nowMs + min(f.deleteRetentionMs, math.MaxInt64-max(f.nowMs, 0))
	}
	logAppendTime := h.Attributes&batch.TimestampTypeBit != 0
	maxTs := h.MaxTimestamp
	if !logAppendTime && len(kept) > 0 {
		maxTs = math.MinInt64
	}
	var body []byte
	for _, r := range kept {
		ts := h.BaseTimestamp + r.TimestampDelta
		if !logAppendTime {
			maxTs = max(maxTs, ts)
		}
		body = records.Append(body, r, ts-baseTs)
	}
	return batch.Filtered(h, attrs, baseTs, maxTs, int32(len(kept)), body)
}

func infoOf(h batch.Header) batchInfo {
	return batchInfo{producerID: h.ProducerID, base: h.BaseOffset, transactional: h.IsTransactional()}
}

// marker decides what becomes of a transaction marker, by Kafka's rules: it
// stays while any batch of its transaction does (an ABORT marker tells
// read_committed readers to skip them; a COMMIT marker ends the
// transaction for the last stable offset); once none does, the first pass
// stamps it with a delete horizon (now + delete.retention.ms, as a
// tombstone's, so a consumer that read the transaction's records still
// sees its end) and a pass after the horizon removes it. A marker that is
// its producer's last batch is kept empty, for the producer's epoch.
func (f *filter) marker(h batch.Header, data []byte) ([]byte, error) {
	removable := true // an emptied (already cleaned) marker is, as in Kafka
	if m, err := batch.ParseMarker(data); err == nil {
		seen := f.abortedSeen
		if m.Commit {
			seen = f.committedSeen
		}
		removable = !seen[h.ProducerID]
		delete(seen, h.ProducerID)
	}
	if !removable {
		return data, nil
	}
	if !h.HasDeleteHorizon() {
		_, recs, err := records.Decode(data, maxCleanBatchBytes)
		if err != nil {
			return data, nil
		}
		out := f.rebuild(h, recs, true)
		oh, _ := batch.ParseHeader(out)
		f.nextHorizon = min(f.nextHorizon, oh.BaseTimestamp)
		return out, nil
	}
	if f.nowMs < h.BaseTimestamp {
		f.nextHorizon = min(f.nextHorizon, h.BaseTimestamp)
		return data, nil
	}
	f.removedMarkers[h.LastOffset()] = true
	f.res.MarkersRemoved++
	if f.lastBatches[h.ProducerID] == h.LastOffset() {
		return f.rebuild(h, nil, false), nil
	}
	return nil, nil
}
