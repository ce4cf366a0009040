package api

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkProducePath measures the leader's produce path from the
// handler's validation of a partition's records (validateProduceRecords)
// to the log (a real segment file, no fsync): a 1 MiB producer batch of
// 1 KiB or 100 B records. "crc=twice" appends with Log.Append, which
// checks the CRC again as the path did before; "crc=once" with
// Log.AppendValidated, what the replica core calls now.
//
//	go test -run '^$' -bench ProducePath -benchmem -count 6 ./internal/api/
func BenchmarkProducePath(b *testing.B) {
	tc := config.TopicConfig{MessageTimestampType: "CreateTime", MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: math.MaxInt64}
	for _, size := range []int{1024, 100} {
		values := make([][]byte, (1<<20)/size)
		for i := range values {
			values[i] = make([]byte, size)
			for j := range values[i] {
				values[i][j] = byte('a' + (i+j)%26)
			}
		}
		recs := batch.Build(values, 1_700_000_000_000)
		for _, path := range []struct {
			name string
			fn   func(*storage.Log, []byte, int32, int64) (storage.AppendResult, error)
		}{{"crc=twice", (*storage.Log).Append}, {"crc=once", (*storage.Log).AppendValidated}} {
			b.Run(fmt.Sprintf("record=%dB/%s", size, path.name), func(b *testing.B) {
				l, err := storage.Open(vfs.OS{}, b.TempDir(), storage.DefaultConfig(),
					storage.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				rules := produceRules(tc, 1_700_000_000_000)
				b.SetBytes(int64(len(recs)))
				b.ReportAllocs()
				for b.Loop() {
					batches, err := validateProduceRecords(recs, 2<<20, rules, 9, false)
					if err != nil {
						b.Fatal(err)
					}
					for _, bt := range batches {
						if _, err := path.fn(l, bt, 0, 1_700_000_000_000); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
