package storage

import (
	"fmt"
	"math"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

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
	defer l.unlock()
	at := l.indexOfSegment(srcs[0])
	if l.closed || l.failed != nil || at < 0 || at+len(srcs) >= len(l.segments) {
		return discard(errLogChanged)
	}
	for k, s := range srcs {
		if l.segments[at+k] != s || s.size != plan.sizes[g[0]+k] {
			return discard(errLogChanged)
		}
	}
	if err := l.swapLocked(at, srcs, out, f.removedMarkers); err != nil {
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
