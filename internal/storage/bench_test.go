package storage

import (
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// benchBatch is 16 records of 1 KiB: about 16 KiB, a typical producer batch.
func benchBatch() []byte { return makeBatch(16, 1024, 1_700_000_000_000, 42) }

func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name        string
		syncEachOne bool
	}{{"nosync", false}, {"sync-per-batch", true}} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := Open(vfs.OS{}, b.TempDir(), DefaultConfig(), quietOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			data := benchBatch()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(data, 0, int64(i)); err != nil {
					b.Fatal(err)
				}
				if tc.syncEachOne {
					if _, err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	l, err := Open(vfs.OS{}, b.TempDir(), cfg, quietOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := benchBatch()
	const batches = 4096 // 64 MiB over two segments
	for i := range batches {
		if _, err := l.Append(data, 0, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	const maxBytes = 1 << 20
	b.ResetTimer()
	var total int64
	offset := int64(0)
	for i := 0; i < b.N; i++ {
		out, err := l.Read(offset, maxBytes, end, true)
		if err != nil {
			b.Fatal(err)
		}
		total += int64(len(out))
		offset += int64(len(out)/len(data)) * 16
		if offset >= end {
			offset = 0
		}
	}
	b.SetBytes(total / int64(b.N))
}
