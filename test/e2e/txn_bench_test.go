package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce measures a producer's throughput on one broker
// (acks=all, fsync per write): idempotent, and transactional with
// transactions of 100 and of 1,000 records of 100 bytes; records/s is
// the number to compare. Skipped without the partition side.
//
//	go test ./test/e2e/ -run '^$' -bench BenchmarkTxnProduce -benchtime 20000x
func BenchmarkTxnProduce(b *testing.B) {
	if !servesMarkers() {
		b.Skip("the partition side of transactions (WriteTxnMarkers) is not in this build")
	}
	tb := startBroker(b)
	val := make([]byte, 100)
	for _, size := range []int{0, 100, 1000} {
		name := "idempotent"
		if size > 0 {
			name = fmt.Sprintf("txn-of-%d", size)
		}
		topic := "bench-" + name
		tb.createTopic(topic, 3, nil)
		b.Run(name, func(b *testing.B) {
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic)}
			if size > 0 {
				opts = append(opts, kgo.TransactionalID(topic))
			}
			cl := tb.client(opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			b.ResetTimer()
			for done := 0; done < b.N; {
				k := b.N - done
				if size > 0 {
					k = min(k, size)
					if err := cl.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
				}
				for range k {
					wg.Add(1)
					cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
						if err != nil {
							b.Error(err)
						}
						wg.Done()
					})
				}
				if size > 0 {
					if err := cl.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						b.Fatal(err)
					}
				}
				done += k
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
