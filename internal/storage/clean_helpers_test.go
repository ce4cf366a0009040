package storage

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/records"
)

// kv is one record a compaction test writes; a nil value is a tombstone.
type kv struct {
	key, value string
	tombstone  bool
}

// keyedBatch builds a batch of keyed records at timestamp ts (through
// batch.BuildKeyed, the broker's own builder), optionally as an idempotent
// producer's batch.
func keyedBatch(ts int64, pid int64, epoch int16, seq int32, recs ...kv) []byte {
	kvs := make([]batch.KeyValue, len(recs))
	for i, r := range recs {
		kvs[i].Key = []byte(r.key)
		if !r.tombstone {
			kvs[i].Value = []byte(r.value)
		}
	}
	b := batch.BuildKeyed(kvs, ts)
	if pid >= 0 {
		binary.BigEndian.PutUint64(b[43:], uint64(pid))
		binary.BigEndian.PutUint16(b[51:], uint16(epoch))
		binary.BigEndian.PutUint32(b[53:], uint32(seq))
		binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	}
	return b
}

// stored is one record as read back from the log.
type stored struct {
	offset    int64
	key       string
	value     string
	tombstone bool
	ts        int64
}

func (s stored) String() string {
	if s.tombstone {
		return fmt.Sprintf("%d:%s=<nil>@%d", s.offset, s.key, s.ts)
	}
	return fmt.Sprintf("%d:%s=%s@%d", s.offset, s.key, s.value, s.ts)
}

// readRecords reads every record of the log, in order, checking that
// offsets strictly increase.
func readRecords(t testing.TB, l *Log) []stored {
	t.Helper()
	var out []stored
	last := int64(-1)
	for _, b := range readAll(t, l) {
		h, recs, err := records.Decode(b, 1<<20)
		if err != nil {
			t.Fatalf("decode batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			off := r.Offset(h)
			if off <= last {
				t.Fatalf("offset %d after %d", off, last)
			}
			last = off
			out = append(out, stored{offset: off, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil, ts: r.Timestamp(h)})
		}
	}
	return out
}

// latest returns each key's last record.
func latest(recs []stored) map[string]stored {
	m := map[string]stored{}
	for _, r := range recs {
		m[r.key] = r
	}
	return m
}

func mustClean(t testing.TB, l *Log, p CleanParams) CleanResult {
	t.Helper()
	res, err := l.Clean(p, NewOffsetMap(1<<20))
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return res
}

func mustSync(t testing.TB, l *Log) {
	t.Helper()
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// compactConfig rolls often and cleans whatever is dirty.
func compactConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 1024
	c.IndexIntervalBytes = 100
	c.MinCleanableDirtyRatio = 0
	c.DeleteRetentionMs = 1000
	return c
}

// writeUpdates appends rounds of updates of keys k0..k<keys-1>, one record
// per batch, at timestamp ts.
func writeUpdates(t testing.TB, l *Log, rounds, keys int, ts int64) {
	t.Helper()
	for r := range rounds {
		for k := range keys {
			mustAppend(t, l, keyedBatch(ts, -1, 0, 0, kv{key: fmt.Sprintf("k%d", k), value: fmt.Sprintf("v%d-%d", k, r)}), 0, ts)
		}
	}
}
