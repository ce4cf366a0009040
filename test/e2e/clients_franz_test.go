package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go with its defaults: idempotent, acks=all.

var franzCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

func franzProduce(ctx context.Context, addr string, rs *recordSet, codec string) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(franzCodecs[codec]),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		return fmt.Errorf("franz-go client: %w", err)
	}
	defer cl.Close()
	var (
		mu       sync.Mutex
		firstErr error
	)
	for _, r := range rs.all() {
		kr := &kgo.Record{Topic: rs.topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("franz-go flush: %w", err)
	}
	if firstErr != nil {
		return fmt.Errorf("franz-go produce: %w", firstErr)
	}
	return nil
}

// franzConsume reads counts[p] records from every partition p, from the
// start, with any extra kgo options (hooks).
func franzConsume(ctx context.Context, addr, topic string, counts []int, opts ...kgo.Opt) ([][]testRecord, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range counts {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("franz-go client: %w", err)
	}
	defer cl.Close()
	got := make([][]testRecord, len(counts))
	remaining := 0
	for _, c := range counts {
		remaining += c
	}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return got, fmt.Errorf("franz-go consume: %d records missing: %w", remaining, err)
		}
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s/%d: %w", t, p, err))
		})
		if fetchErr != nil {
			return got, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			tr := testRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				tr.Headers = append(tr.Headers, testHeader{Key: h.Key, Value: h.Value})
			}
			got[r.Partition] = append(got[r.Partition], tr)
			remaining--
		})
	}
	return got, nil
}

// batchCodecHook records the compression codec of every fetched batch.
type batchCodecHook struct {
	mu     sync.Mutex
	counts map[uint8]int
}

var _ kgo.HookFetchBatchRead = (*batchCodecHook)(nil)

func (h *batchCodecHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[uint8]int{}
	}
	h.counts[m.CompressionType]++
}

// storedCodecs reads the whole topic with franz-go and returns how many
// stored batches use each codec, to prove a producer really compressed.
func storedCodecs(ctx context.Context, addr string, rs *recordSet) (map[uint8]int, error) {
	hook := &batchCodecHook{}
	if _, err := franzConsume(ctx, addr, rs.topic, rs.counts(), kgo.WithHooks(hook)); err != nil {
		return nil, err
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	return hook.counts, nil
}
