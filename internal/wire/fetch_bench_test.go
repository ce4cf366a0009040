package wire

import (
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkFetchPath measures what serving a fetch costs per byte once
// the broker knows what to read: Log.Read of up to 1 MiB (a pread into a
// fresh buffer, every batch's CRC checked) and the response encoded for
// the wire (a second copy of the records): "encode=fresh" into a new
// buffer, as the connection writer did for every response over 1 MiB;
// "encode=pooled" into ResponseBuffer's, as it did next;
// "encode=vectored" only the fields, the records left where the read put
// them (AppendFetchVectored, what the connection writer does now for
// answers of 64 KiB or more). B/op shows the allocations per byte.
//
//	go test -run '^$' -bench FetchPath -benchmem -count 6 ./internal/wire/
func BenchmarkFetchPath(b *testing.B) {
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	l, err := storage.Open(vfs.OS{}, b.TempDir(), cfg, storage.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	values := make([][]byte, 16)
	for i := range values {
		values[i] = make([]byte, 1024)
	}
	for range 2048 { // 32 MiB in 16 KiB batches
		if _, err := l.Append(batch.Build(values, 1_700_000_000_000), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	hdr := RequestHeader{Key: 1, Version: 13, CorrelationID: 7}
	for _, mode := range []string{"fresh", "pooled", "vectored"} {
		b.Run("encode="+mode, func(b *testing.B) { benchFetch(b, l, end, hdr, mode) })
	}
}

func benchFetch(b *testing.B, l *storage.Log, end int64, hdr RequestHeader, mode string) {
	var vec VectoredFetch
	b.ReportAllocs()
	var total int64
	offset := int64(0)
	for b.Loop() {
		data, err := l.Read(offset, 1<<20, end, true)
		if err != nil {
			b.Fatal(err)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(13)
		t := kmsg.NewFetchResponseTopic()
		p := kmsg.NewFetchResponseTopicPartition()
		p.HighWatermark, p.LastStableOffset, p.RecordBatches = end, end, data
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		switch mode {
		case "fresh":
			total += int64(len(AppendResponse(nil, hdr, resp)))
		case "pooled":
			out := AppendResponse(ResponseBuffer(nil, resp), hdr, resp)
			total += int64(len(out))
			ReleaseResponseBuffer(out)
		case "vectored":
			if !AppendFetchVectored(&vec, vec.Head, hdr, resp) {
				b.Fatal("refused")
			}
			total += int64(vec.Size)
		}
		batches := 0
		_ = batch.Split(data, func([]byte) error { batches++; return nil })
		if offset += 16 * int64(batches); offset >= end {
			offset = 0
		}
	}
	b.SetBytes(total / int64(b.N))
}
