package replica

import (
	"fmt"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/vfs"
)

// BenchmarkOpenReplica measures opening a partition whose log holds many
// small batches (the start-up cost of rebuilding the producer state, the
// open transactions and the aborted-transaction index by scanning every
// batch header): 100 producers, each batch of 4 records, one in three
// transactional, one transaction in ten aborted.
//
//	go test ./internal/replica -run '^$' -bench OpenReplica -benchtime 3x
func BenchmarkOpenReplica(b *testing.B) {
	for _, batches := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("batches=%d", batches), func(b *testing.B) {
			dir := b.TempDir()
			cfg, err := config.ResolveTopic(mustBroker(), nil)
			if err != nil {
				b.Fatal(err)
			}
			l, err := storage.Open(vfs.OS{}, dir, StorageConfig(cfg), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			values := [][]byte{[]byte("v1"), []byte("v2"), []byte("v3"), []byte("v4")}
			seq := map[int64]int32{}
			for i := range batches {
				pid := int64(i % 100)
				var bt []byte
				switch {
				case i%30 == 29:
					bt = batch.BuildMarker(pid, 0, batch.Marker{Commit: i%300 != 299}, 1)
				case i%3 == 0:
					bt = batch.BuildTransactional(values, 1, pid, 0, seq[pid])
					seq[pid] += 4
				default:
					bt = batch.BuildProducer(values, 1, pid+1000, 0, seq[pid+1000])
					seq[pid+1000] += 4
				}
				if _, err := l.Append(bt, 0, 1); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				r, err := Open(vfs.OS{}, dir, "bench-0", cfg, Options{LocalID: 1})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r.Log().Close()
				b.StartTimer()
			}
		})
	}
}
