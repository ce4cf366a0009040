package e2e

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafka-go's Writer defaults to RequiredAcks=0 (fire and forget); the tests
// set RequireAll. It ignores Message.Partition on writes, so a balancer
// routes each record by its partition header.

var kafkaGoCodecs = map[string]kafka.Compression{
	"none":   0,
	"gzip":   kafka.Gzip,
	"snappy": kafka.Snappy,
	"lz4":    kafka.Lz4,
	"zstd":   kafka.Zstd,
}

// headerBalancer sends a record to the partition named in its header.
type headerBalancer struct{}

func (headerBalancer) Balance(msg kafka.Message, partitions ...int) int {
	hs := make([]testHeader, 0, len(msg.Headers))
	for _, h := range msg.Headers {
		hs = append(hs, testHeader{Key: h.Key, Value: h.Value})
	}
	p, err := partitionFromHeaders(hs)
	if err != nil || p < 0 || p >= len(partitions) {
		// Cannot happen with makeRecords; partition 0 makes the
		// mismatch visible in verifyRecords rather than a panic here.
		return partitions[0]
	}
	return partitions[p]
}

func kafkaGoProduce(ctx context.Context, addr string, rs *recordSet, codec string) error {
	// A Transport of its own: kafka.DefaultTransport caches metadata for
	// 6 s across writers and would not know a topic created since.
	transport := &kafka.Transport{ClientID: "skein-e2e-kafka-go"}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{
		Transport:    transport,
		Addr:         kafka.TCP(addr),
		Topic:        rs.topic,
		Balancer:     headerBalancer{},
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkaGoCodecs[codec],
		BatchSize:    500,
		// The batch timeout only matters for a partial last batch; the
		// default (1 s) would only slow the test down.
		BatchTimeout: 10 * time.Millisecond,
	}
	defer w.Close()
	recs := rs.all()
	msgs := make([]kafka.Message, 0, len(recs))
	for _, r := range recs {
		m := kafka.Message{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msgs = append(msgs, m)
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("kafka-go write: %w", err)
	}
	return nil
}

func kafkaGoConsume(ctx context.Context, addr, topic string, counts []int) ([][]testRecord, error) {
	got := make([][]testRecord, len(counts))
	for p, want := range counts {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: p,
			MinBytes:  1,
			MaxBytes:  10 << 20,
			MaxWait:   500 * time.Millisecond,
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			r.Close()
			return got, fmt.Errorf("kafka-go set offset: %w", err)
		}
		for len(got[p]) < want {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return got, fmt.Errorf("kafka-go partition %d: read %d of %d: %w", p, len(got[p]), want, err)
			}
			tr := testRecord{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}
			for _, h := range m.Headers {
				tr.Headers = append(tr.Headers, testHeader{Key: h.Key, Value: h.Value})
			}
			got[p] = append(got[p], tr)
		}
		if err := r.Close(); err != nil {
			return got, fmt.Errorf("kafka-go close reader %d: %w", p, err)
		}
	}
	return got, nil
}
