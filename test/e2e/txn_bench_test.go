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
	val := make([]byte, 100)
	// The transactional runs go twice: with KIP-890 part 1's verification
	// (the default: the leader asks the coordinator before each
	// transaction's first batch on each partition) and without.
	for _, verify := range []bool{true, false} {
		tb := startBroker(b, withProp("transaction.partition.verification.enable", fmt.Sprint(verify)))
		for _, size := range []int{0, 100, 1000} {
			if size == 0 && !verify {
				continue // an idempotent producer is never verified
			}
			name := "idempotent"
			if size > 0 {
				name = fmt.Sprintf("txn-of-%d", size)
				if !verify {
					name += "-unverified"
				}
			}
			topic := "bench-" + name
			tb.createTopic(topic, 3, nil)
			b.Run(name, func(b *testing.B) { benchTxnProduce(b, tb, topic, size, val) })
		}
	}
}

func benchTxnProduce(b *testing.B, tb *testBroker, topic string, size int, val []byte) {
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
}

// BenchmarkTxnConsume measures a consumer's throughput on one broker,
// read_committed against read_uncommitted, over the same kind of log:
// records of 100 bytes written in committed transactions of 1,000 (so
// one commit marker per 1,000 records per partition touched), produced
// before the timer starts; records/s is the number to compare.
//
//	go test ./test/e2e/ -run '^$' -bench BenchmarkTxnConsume -benchtime 20000x
func BenchmarkTxnConsume(b *testing.B) {
	if !servesMarkers() {
		b.Skip("the partition side of transactions (WriteTxnMarkers) is not in this build")
	}
	tb := startBroker(b)
	val := make([]byte, 100)
	for _, level := range []struct {
		name string
		iso  kgo.IsolationLevel
	}{{"read_uncommitted", kgo.ReadUncommitted()}, {"read_committed", kgo.ReadCommitted()}} {
		b.Run(level.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			topic := fmt.Sprintf("bench-consume-%s-%d", level.name, b.N)
			tb.createTopic(topic, 3, nil)
			p := tb.client(kgo.DefaultProduceTopic(topic), kgo.TransactionalID(topic))
			for done := 0; done < b.N; {
				k := min(b.N-done, 1000)
				if err := p.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				recs := make([]*kgo.Record, k)
				for i := range recs {
					recs[i] = &kgo.Record{Value: val}
				}
				if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
				if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatal(err)
				}
				done += k
			}
			cl := tb.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(level.iso))
			b.ResetTimer()
			for seen := 0; seen < b.N; {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatalf("consumed %d of %d records", seen, b.N)
				}
				fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s-%d: %v", t, p, err) })
				seen += fs.NumRecords()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
