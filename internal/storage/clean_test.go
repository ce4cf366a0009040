package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

func TestCleanKeepsLatestPerKey(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", compactConfig())
	writeUpdates(t, l, 40, 5, 100)
	mustSync(t, l)
	before := readRecords(t, l)
	start, end, segs, size := l.LogStartOffset(), l.LogEndOffset(), len(l.segments), l.Size()
	activeBase := l.active().base

	res := mustClean(t, l, CleanParams{NowMs: 1000, UpTo: end})
	if !res.Cleaned || res.SegmentsBefore != segs-1 || res.SegmentsAfter > res.SegmentsBefore || res.CleanedTo != activeBase {
		t.Fatalf("result %+v (segments %d, active at %d)", res, segs, activeBase)
	}
	if l.LogStartOffset() != start || l.LogEndOffset() != end || l.Size() >= size {
		t.Fatalf("start %d end %d size %d; before %d %d %d", l.LogStartOffset(), l.LogEndOffset(), l.Size(), start, end, size)
	}
	after := readRecords(t, l)
	checkCompacted(t, before, after, activeBase)
	// The first pass cannot merge full segments; the next one merges the
	// now small ones into one.
	res = mustClean(t, l, CleanParams{NowMs: 1000, UpTo: end, Force: true})
	if !res.Cleaned || res.SegmentsAfter != 1 || len(l.segments) != 2 {
		t.Fatalf("second pass %+v, %d segments", res, len(l.segments))
	}
	assertRecords(t, "merged", readRecords(t, l), after)

	// Reads of a removed offset return the next surviving batch.
	for _, r := range before {
		if r.offset >= activeBase {
			break
		}
		data, err := l.Read(r.offset, 1<<16, end, true)
		if err != nil || len(data) == 0 {
			t.Fatalf("read %d: %v", r.offset, err)
		}
		h, _ := batch.ParseHeader(data)
		next := nextSurviving(after, r.offset)
		if h.BaseOffset > r.offset && h.BaseOffset != next {
			t.Fatalf("read %d starts at %d, next surviving record is %d", r.offset, h.BaseOffset, next)
		}
	}

	// A clean reopen (indexes from their files), a reopen that rebuilds
	// them, and a full recovery all serve the same records.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	indexes := indexFiles(t, fs, "/p")
	l = openLog(t, fs, "/p", compactConfig())
	assertRecords(t, "clean reopen", readRecords(t, l), after)
	l.Close()
	for name := range indexes {
		fs.Remove("/p/" + name)
	}
	l = openLog(t, fs, "/p", compactConfig())
	assertRecords(t, "rebuilt indexes", readRecords(t, l), after)
	l.Close()
	if rebuilt := indexFiles(t, fs, "/p"); !equalFiles(rebuilt, indexes) {
		t.Fatal("rebuilt index files differ from the ones the cleaner wrote")
	}
	fs.Remove("/p/" + recoveryPointFile)
	fs.Remove("/p/" + cleanShutdownFile)
	l = openLog(t, fs, "/p", compactConfig())
	defer l.Close()
	assertRecords(t, "full recovery", readRecords(t, l), after)
	if !l.OffsetGaps() {
		t.Fatal("compacted log not marked as having offset gaps")
	}
	// Time lookups still work across the rewritten segments.
	if off, _, found, err := l.OffsetForTimestamp(100); err != nil || !found || off != after[0].offset {
		t.Fatalf("offset for timestamp 100: %d %v %v, want %d", off, found, err, after[0].offset)
	}
}

// checkCompacted checks that after holds exactly, below cleanedTo, each
// key's latest record of before, and from cleanedTo on everything, with
// offsets and timestamps unchanged.
func checkCompacted(t *testing.T, before, after []stored, cleanedTo int64) {
	t.Helper()
	var clean []stored
	for _, r := range before {
		if r.offset < cleanedTo {
			clean = append(clean, r)
		}
	}
	last := latest(clean)
	var want []stored
	for _, r := range before {
		if r.offset >= cleanedTo || last[r.key].offset == r.offset {
			want = append(want, r)
		}
	}
	assertRecords(t, "compacted", after, want)
}

func assertRecords(t *testing.T, label string, got, want []stored) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", label, got, want)
	}
}

func nextSurviving(recs []stored, offset int64) int64 {
	for _, r := range recs {
		if r.offset >= offset {
			return r.offset
		}
	}
	return -1
}

func indexFiles(t *testing.T, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	entries, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if _, isLog := parseSegmentName(e.Name); isLog || !(bytes.HasSuffix([]byte(e.Name), []byte(indexSuffix)) || bytes.HasSuffix([]byte(e.Name), []byte(timeIndexSuffix))) {
			continue
		}
		data, err := vfs.ReadFile(fs, dir+"/"+e.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name] = data
	}
	return out
}

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestCleanTombstonesOutliveDeleteRetention(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", compactConfig())
	defer l.Close()
	mustAppend(t, l, keyedBatch(10, -1, 0, 0, kv{key: "a", value: "1"}, kv{key: "b", value: "1"}), 0, 10)
	mustAppend(t, l, keyedBatch(20, -1, 0, 0, kv{key: "a", tombstone: true}), 0, 20)
	writeUpdates(t, l, 8, 3, 30) // other keys, to roll past the tombstone
	mustSync(t, l)
	end := l.LogEndOffset()
	tombstoneOffset := int64(2)
	find := func(key string) []stored {
		var out []stored
		for _, r := range readRecords(t, l) {
			if r.key == key {
				out = append(out, r)
			}
		}
		return out
	}

	// First cleaning at t=1000: a=1 goes, the tombstone stays and its
	// batch gets the delete horizon 1000 + delete.retention.ms.
	res := mustClean(t, l, CleanParams{NowMs: 1000, UpTo: end, Force: true})
	if got := find("a"); len(got) != 1 || !got[0].tombstone || got[0].offset != tombstoneOffset || got[0].ts != 20 {
		t.Fatalf("after the first cleaning a is %v", got)
	}
	if res.TombstonesKept != 1 {
		t.Fatalf("result %+v", res)
	}
	data, err := l.Read(tombstoneOffset, 1<<16, end, true)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := batch.ParseHeader(data)
	if !h.HasDeleteHorizon() || h.BaseTimestamp != 2000 || h.BaseOffset != tombstoneOffset {
		t.Fatalf("tombstone batch %+v: want delete horizon 2000", h)
	}
	// Before the horizon the tombstone stays; after it, it goes. b stays.
	mustClean(t, l, CleanParams{NowMs: 1999, UpTo: end, Force: true})
	if got := find("a"); len(got) != 1 {
		t.Fatalf("tombstone removed before its horizon: %v", got)
	}
	mustClean(t, l, CleanParams{NowMs: 2000, UpTo: end, Force: true})
	if got := find("a"); len(got) != 0 {
		t.Fatalf("tombstone kept after its horizon: %v", got)
	}
	if got := find("b"); len(got) != 1 || got[0].value != "1" {
		t.Fatalf("b is %v", got)
	}
}

func TestCleanOnlyWhenDue(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.5
	cfg.MinCompactionLagMs = 500
	l := openLog(t, vfs.NewMem(), "/p", cfg)
	defer l.Close()
	writeUpdates(t, l, 1, 80, 100) // distinct keys: they stay
	mustSync(t, l)
	end := l.LogEndOffset()

	// Segments are younger than min.compaction.lag.ms at t=550.
	if res := mustClean(t, l, CleanParams{NowMs: 550, UpTo: end}); res.Cleaned {
		t.Fatalf("cleaned records inside the compaction lag: %+v", res)
	}
	// Nothing at or past UpTo (the high watermark) is cleaned.
	if res := mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.segments[0].next - 1}); res.Cleaned {
		t.Fatalf("cleaned above the high watermark: %+v", res)
	}
	res := mustClean(t, l, CleanParams{NowMs: 1000, UpTo: end})
	if !res.Cleaned || res.DirtyRatio != 1 {
		t.Fatalf("first pass %+v", res)
	}
	// A little new dirty data is below the ratio: no pass.
	writeUpdates(t, l, 4, 4, 100)
	mustSync(t, l)
	res = mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset()})
	if res.Cleaned || res.DirtyRatio >= 0.5 {
		t.Fatalf("second pass %+v", res)
	}
}

func TestCleanOffsetMapBound(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", compactConfig())
	defer l.Close()
	// Distinct keys: each segment holds about 14 records.
	for i := range 200 {
		mustAppend(t, l, keyedBatch(1, -1, 0, 0, kv{key: fmt.Sprintf("key-%03d", i), value: "v"}), 0, 1)
	}
	mustSync(t, l)
	m := NewOffsetMap(60 * slotSize) // about 54 keys
	first, err := l.Clean(CleanParams{NowMs: 2, UpTo: l.LogEndOffset(), Force: true}, m)
	if err != nil {
		t.Fatal(err)
	}
	if !first.MapFull || first.CleanedTo >= l.active().base || first.CleanedTo <= l.segments[0].base {
		t.Fatalf("first pass %+v, active at %d", first, l.active().base)
	}
	// Later passes go on from the checkpoint until everything is clean.
	for pass := 0; ; pass++ {
		res, err := l.Clean(CleanParams{NowMs: 2, UpTo: l.LogEndOffset()}, m)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Cleaned {
			break
		}
		if pass > 20 {
			t.Fatal("cleaning never finishes")
		}
	}
	if got := len(readRecords(t, l)); got != 200 {
		t.Fatalf("%d records, want all 200 distinct keys", got)
	}
}

// TestCleanAbandonsWhenRetentionRemovesItsSegments deletes the segments a
// pass is cleaning while it writes the cleaned copy (from the filesystem
// seam, at the moment the .cleaned file is created): the pass gives up
// without touching the log, and the next one compacts what is left.
func TestCleanAbandonsWhenRetentionRemovesItsSegments(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", compactConfig())
	defer l.Close()
	writeUpdates(t, l, 30, 3, 100)
	mustSync(t, l)
	cut := l.segments[2].base
	fired := false
	fs.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpOpen && !fired && bytes.HasSuffix([]byte(path), []byte(logSuffix+cleanedSuffix)) {
			fired = true
			if err := l.DeleteBefore(cut); err != nil {
				t.Errorf("delete before %d: %v", cut, err)
			}
		}
		return nil
	})
	before := readRecords(t, l)
	_, err := l.Clean(CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true}, NewOffsetMap(1<<20))
	fs.SetFault(nil)
	if !fired || !IsLogChanged(err) {
		t.Fatalf("fired %v, clean: %v; want the log-changed error", fired, err)
	}
	var want []stored
	for _, r := range before {
		if r.offset >= cut {
			want = append(want, r)
		}
	}
	assertRecords(t, "after the abandoned pass", readRecords(t, l), want)
	if names := indexFiles(t, fs, "/p"); len(names) == 0 {
		t.Fatal("no index files left")
	}
	entries, _ := fs.ReadDir("/p")
	for _, e := range entries {
		if bytes.HasSuffix([]byte(e.Name), []byte(cleanedSuffix)) {
			t.Fatalf("leftover %s", e.Name)
		}
	}
	res := mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true})
	if !res.Cleaned || l.LogStartOffset() != cut {
		t.Fatalf("next pass %+v, log start %d", res, l.LogStartOffset())
	}
}

// gzipped returns b with its records section gzip-compressed.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b[batch.HeaderSize:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := append(bytes.Clone(b[:batch.HeaderSize]), buf.Bytes()...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batch.LogOverhead))
	binary.BigEndian.PutUint16(out[21:], binary.BigEndian.Uint16(out[21:])|batch.CompressionGzip)
	binary.BigEndian.PutUint32(out[17:], batch.CRC(out))
	return out
}

// TestCleanCompressedBatchesAndEpochs compacts gzip batches: one that
// loses a record is rewritten uncompressed with the survivors at their
// offsets; one that loses nothing stays byte for byte (still compressed).
// The leader-epoch cache is untouched, also across a reopen.
func TestCleanCompressedBatchesAndEpochs(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", compactConfig())
	mixed := gzipped(t, keyedBatch(50, -1, 0, 0, kv{key: "a", value: "1"}, kv{key: "b", value: "1"}, kv{key: "c", value: "1"}))
	mustAppend(t, l, mixed, 0, 50)
	intact := gzipped(t, keyedBatch(60, -1, 0, 0, kv{key: "d", value: "1"}, kv{key: "e", value: "1"}))
	mustAppend(t, l, intact, 3, 60)
	mustAppend(t, l, keyedBatch(70, -1, 0, 0, kv{key: "b", value: "2"}), 3, 70)
	for epoch := int32(5); epoch <= 7; epoch += 2 {
		for i := range 15 {
			mustAppend(t, l, keyedBatch(80, -1, 0, 0, kv{key: fmt.Sprintf("x%d", i%3), value: "y"}), epoch, 80)
		}
	}
	mustSync(t, l)
	epochs := l.Epochs().Entries()
	mustClean(t, l, CleanParams{NowMs: 1000, UpTo: l.LogEndOffset(), Force: true})

	got := readAll(t, l)
	first, _ := batch.ValidateStored(got[0])
	if first.BaseOffset != 0 || first.LastOffset() != 2 || first.RecordCount != 2 || first.Compression() != batch.CompressionNone {
		t.Fatalf("filtered gzip batch %+v", first)
	}
	if !bytes.Equal(got[1][12:], intact[12:]) { // base offset and epoch are stamped at append
		t.Fatal("the batch that lost nothing was rewritten")
	}
	recs := readRecords(t, l)
	if recs[0].offset != 0 || recs[0].key != "a" || recs[1].offset != 2 || recs[1].key != "c" {
		t.Fatalf("survivors of the gzip batch: %v", recs[:2])
	}
	if e := l.Epochs().Entries(); !equalEntries(e, epochs) {
		t.Fatalf("epochs %v after compaction, %v before", e, epochs)
	}
	l.Close()
	fs.Remove("/p/" + cleanShutdownFile)
	l = openLog(t, fs, "/p", compactConfig())
	defer l.Close()
	if e := l.Epochs().Entries(); !equalEntries(e, epochs) {
		t.Fatalf("epochs %v after reopen, %v before", e, epochs)
	}
}
