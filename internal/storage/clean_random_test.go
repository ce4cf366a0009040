package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestCleanRandomWorkloads interleaves random appends (updates, tombstones,
// multi-record batches, an idempotent producer) with compaction passes at a
// moving clock, a dedupe buffer too small for one pass, and reopens. After
// every pass: each record read back is exactly one that was appended at its
// offset; each key's latest record is there unless it is a tombstone, and a
// tombstone goes only after its delete horizon; the compacted part holds
// one record per key at most.
func TestCleanRandomWorkloads(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			fs := vfs.NewMem()
			cfg := compactConfig()
			cfg.DeleteRetentionMs = int64(rng.IntN(300))
			l := openLog(t, fs, "/p", cfg)
			defer func() { l.Close() }()
			appended := map[int64]stored{}
			latest := map[string]int64{}
			now := int64(1000)
			seq := int32(0)
			m := NewOffsetMap(int64(40+rng.IntN(200)) * slotSize)
			for step := range 400 {
				now += int64(rng.IntN(20))
				switch p := rng.IntN(100); {
				case p < 85:
					n := 1 + rng.IntN(3)
					var recs []kv
					for range n {
						r := kv{key: fmt.Sprintf("k%d", rng.IntN(8)), value: fmt.Sprintf("s%d", step)}
						r.tombstone = rng.IntN(8) == 0
						recs = append(recs, r)
					}
					pid := int64(-1)
					if rng.IntN(4) == 0 {
						pid = 5
					}
					res := mustAppend(t, l, keyedBatch(now, pid, 0, seq, recs...), 0, now)
					if pid >= 0 {
						seq += int32(n)
					}
					for i, r := range recs {
						off := res.BaseOffset + int64(i)
						appended[off] = stored{offset: off, key: r.key, value: r.value, tombstone: r.tombstone, ts: now}
						if r.tombstone {
							appended[off] = stored{offset: off, key: r.key, tombstone: true, ts: now}
						}
						latest[r.key] = off
					}
				case p < 97:
					mustSync(t, l)
					res, err := l.Clean(CleanParams{NowMs: now, UpTo: l.LogEndOffset(), Force: rng.IntN(2) == 0}, m)
					if err != nil {
						t.Fatalf("step %d: clean: %v", step, err)
					}
					checkRandomCompaction(t, l, appended, latest, now, cfg.DeleteRetentionMs)
					if res.Cleaned {
						checkOnePerKey(t, l, res.CleanedTo)
					}
				default:
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(2) == 0 {
						fs.Remove("/p/" + cleanShutdownFile)
					}
					l = openLog(t, fs, "/p", cfg)
				}
			}
		})
	}
}

func checkRandomCompaction(t *testing.T, l *Log, appended map[int64]stored, latest map[string]int64, now, deleteRetentionMs int64) {
	t.Helper()
	got := readRecords(t, l)
	present := map[int64]bool{}
	for _, r := range got {
		if want, ok := appended[r.offset]; !ok || want != r {
			t.Fatalf("read %v, appended %v", r, want)
		}
		present[r.offset] = true
	}
	for key, off := range latest {
		want := appended[off]
		if present[off] {
			continue
		}
		// Only a tombstone may go, and only once its delete horizon
		// (at least delete.retention.ms after it was first cleaned,
		// which was after it was written) has passed.
		if !want.tombstone || now < want.ts+deleteRetentionMs {
			t.Fatalf("key %s: latest record %v missing at t=%d", key, want, now)
		}
	}
	if !slices.IsSortedFunc(got, func(a, b stored) int { return int(a.offset - b.offset) }) {
		t.Fatal("offsets out of order")
	}
}

// checkOnePerKey checks that the compacted part of the log holds at most
// one record per key.
func checkOnePerKey(t *testing.T, l *Log, cleanedTo int64) {
	t.Helper()
	seen := map[string]int64{}
	for _, r := range readRecords(t, l) {
		if r.offset >= cleanedTo {
			break
		}
		if prev, dup := seen[r.key]; dup {
			t.Fatalf("key %s at %d and %d below the cleaned offset %d", r.key, prev, r.offset, cleanedTo)
		}
		seen[r.key] = r.offset
	}
}
