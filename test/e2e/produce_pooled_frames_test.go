package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLargeProducesFromPooledFrames: Produce frames of 64 KiB and more
// are read into pooled buffers that the next request reuses once the
// handler returned. Two producers send large batches of records whose
// every byte says which record it is, many requests in flight at once;
// every record read back must be exactly what was sent (a frame reused
// before its batches were appended would show as another record's bytes,
// or as a CRC failure).
func TestLargeProducesFromPooledFrames(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("pooled", 2, nil)
	checkLargeProduces(t, tb.client, "pooled")
}

// TestLargeReplicatedProducesFromPooledFrames is the same with three
// replicas that must all have every batch before it is acknowledged
// (min.insync.replicas=3): the followers append what they fetched out of
// pooled answer frames (rpc.Conn.RequestPooled), each batch's CRC checked
// on the way in, and a frame reused too early would fail the append and
// with it the acknowledgement.
func TestLargeReplicatedProducesFromPooledFrames(t *testing.T) {
	c := startCluster(t, 3, nil)
	haltAllAtEnd(t, c)
	ctx := testContext(t, time.Minute)
	createReplicatedTopic(ctx, t, observerClient(t, c.addrs()), "pooled-rf3", 2, 3, map[string]string{"min.insync.replicas": "3"})
	checkLargeProduces(t, c.client, "pooled-rf3")
}

func checkLargeProduces(t *testing.T, client func(...kgo.Opt) *kgo.Client, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const perProducer, size = 300, 40 << 10 // ~12 MiB each, batches up to 1 MiB
	value := func(producer, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("p%d-r%05d;", producer, i)), size/10)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*perProducer)
	for p := range 2 {
		cl := client(kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
		defer cl.Close()
		for i := range perProducer {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("%d-%d", p, i)), Value: value(p, i)},
				func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- err
					}
					wg.Done()
				})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
	consumer := client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 2*perProducer {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d: %v", len(seen), 2*perProducer, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var p, i int
			if _, err := fmt.Sscanf(string(r.Key), "%d-%d", &p, &i); err != nil {
				t.Fatalf("record key %q: %v", r.Key, err)
			}
			if !bytes.Equal(r.Value, value(p, i)) {
				t.Fatalf("record %s read back with other bytes than were sent", r.Key)
			}
			seen[string(r.Key)] = true
		})
	}
}

// TestTxnVerifiedProducesFromPooledFrames: a transactional batch that
// opens its producer's transaction on a partition waits for the
// coordinator's verification (KIP-890 part 1) after the Produce handler
// returned, and the connection reuses the request's pooled frame for the
// next request meanwhile. Three transactional producers commit
// transactions of many small batches (linger 0, so requests pipeline on
// each connection); every committed record must read back read_committed
// exactly as sent. Appended from the reused frame, a batch came out as
// another request's bytes: CRC mismatches in the log (the partition then
// refuses to serve past them) and INVALID_TXN_STATE for batches of the
// wrong producer.
func TestTxnVerifiedProducesFromPooledFrames(t *testing.T) {
	requirePartitionSide(t)
	tb := startBroker(t)
	tb.createTopic("txpooled", 3, nil)
	ctx := testContext(t, 90*time.Second)
	const producers, txns, perTxn = 3, 40, 200
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var outOfOrder atomic.Int64
	// Room for the one error that stops each producer, so none blocks.
	errs := make(chan error, producers)
	for p := range producers {
		cl := tb.client(kgo.TransactionalID(fmt.Sprintf("txpooled-%d", p)), kgo.DefaultProduceTopic("txpooled"),
			kgo.ProducerLinger(0), kgo.TransactionTimeout(60*time.Second))
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range txns {
				if err := cl.BeginTransaction(); err != nil {
					errs <- err
					return
				}
				var recMu sync.Mutex
				var recErr error
				values := make([]string, 0, perTxn)
				for i := range perTxn {
					v := fmt.Sprintf("p%d-t%d-r%d-%s", p, x, i, bytes.Repeat([]byte{'a' + byte(p)}, 60))
					values = append(values, v)
					cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
						recMu.Lock()
						defer recMu.Unlock()
						if err != nil && recErr == nil {
							recErr = err
						}
					})
				}
				if err := cl.Flush(ctx); err != nil {
					errs <- err
					return
				}
				recMu.Lock()
				rerr := recErr
				recMu.Unlock()
				if rerr != nil && !errors.Is(rerr, kerr.OutOfOrderSequenceNumber) {
					errs <- fmt.Errorf("producer %d, transaction %d, a record: %w", p, x, rerr)
					return
				}
				// OUT_OF_ORDER_SEQUENCE_NUMBER (open, see
				// docs/transactions.md): franz-go fails the producer id and
				// the transaction is aborted; its records must not show.
				commit := rerr == nil
				if !commit {
					outOfOrder.Add(1)
				}
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					errs <- fmt.Errorf("producer %d, transaction %d: %w", p, x, err)
					return
				}
				if commit {
					mu.Lock()
					for _, v := range values {
						want[v] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("transactional produce: %v", err)
	}
	if n := outOfOrder.Load(); n > 0 {
		t.Logf("%d transactions aborted after OUT_OF_ORDER_SEQUENCE_NUMBER", n)
	}
	consumeCommitted(t, tb.client(kgo.ConsumeTopics("txpooled"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())), want)
}
