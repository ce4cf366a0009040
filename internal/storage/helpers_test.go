package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// makeBatch builds a valid, uncompressed v2 batch of n records with
// valueSize-byte values derived from seed, timestamps ts..ts+n-1, base offset
// 0 and no producer id.
func makeBatch(n, valueSize int, ts int64, seed byte) []byte {
	var records []byte
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = seed + byte(i*7)
	}
	for i := range n {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // headers
		records = binary.AppendVarint(records, int64(len(body)))
		records = append(records, body...)
	}
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)
	be.PutUint32(b[8:], uint32(batch.HeaderSize-batch.LogOverhead+len(records)))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	be.PutUint16(b[21:], 0)
	be.PutUint32(b[23:], uint32(n-1))
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[35:], uint64(ts+int64(n)-1))
	be.PutUint64(b[43:], 0xffffffffffffffff)
	be.PutUint16(b[51:], 0xffff)
	be.PutUint32(b[53:], 0xffffffff)
	be.PutUint32(b[57:], uint32(n))
	b = append(b, records...)
	be.PutUint32(b[17:], batch.CRC(b))
	return b
}

// quietOptions discards log output in tests.
func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// smallConfig makes segments and index intervals small so tests roll and
// index often.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	c.SegmentMs = 0
	c.RetentionMs = -1
	return c
}

func openLog(t testing.TB, fs vfs.FS, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(fs, dir, cfg, quietOptions())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32, now int64) AppendResult {
	t.Helper()
	res, err := l.Append(b, epoch, now)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

// readAll reads every batch from the log start to the log end and returns
// them split, checking contiguity.
func readAll(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	next := l.LogStartOffset()
	for next < l.LogEndOffset() {
		data, err := l.Read(next, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		if len(data) == 0 {
			t.Fatalf("read at %d returned nothing, log end %d", next, l.LogEndOffset())
		}
		err = batch.Split(data, func(b []byte) error {
			h, err := batch.ValidateStored(b)
			if err != nil {
				return err
			}
			if h.LastOffset() < next {
				return errors.New("batch entirely below requested offset")
			}
			next = h.LastOffset() + 1
			out = append(out, bytes.Clone(b))
			return nil
		})
		if err != nil {
			t.Fatalf("split at %d: %v", next, err)
		}
	}
	return out
}

// sameBatches fails unless got holds want's batches, byte for byte.
func sameBatches(t testing.TB, got, want [][]byte, label string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches, want %d", label, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs", label, i)
		}
	}
}
