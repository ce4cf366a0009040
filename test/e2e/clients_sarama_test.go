package e2e

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/IBM/sarama"
)

// sarama defaults to acks=1 and no idempotence: tests set acks=all, and one
// variant turns idempotence on (which sarama only allows with one request in
// flight per connection).

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

func init() {
	// sarama logs to a package-level logger; keep test output readable.
	sarama.Logger = log.New(io.Discard, "", 0)
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "skein-e2e-sarama"
	cfg.Version = sarama.DefaultVersion
	return cfg
}

func saramaProduce(ctx context.Context, addr string, rs *recordSet, codec string, idempotent bool) error {
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = saramaCodecs[codec]
	if idempotent {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return fmt.Errorf("sarama producer: %w", err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for _, r := range rs.all() {
		m := &sarama.ProducerMessage{
			Topic:     rs.topic,
			Partition: r.Partition,
			Key:       sarama.ByteEncoder(r.Key),
			Value:     sarama.ByteEncoder(r.Value),
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs = append(msgs, m)
	}
	// SendMessages has no context; the broker and sarama's own timeouts
	// bound it, and the test's deadline bounds the whole run.
	if err := p.SendMessages(msgs); err != nil {
		return fmt.Errorf("sarama send: %w", err)
	}
	return ctx.Err()
}

func saramaConsume(ctx context.Context, addr, topic string, counts []int) ([][]testRecord, error) {
	cfg := saramaConfig()
	cfg.Consumer.Return.Errors = true
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		return nil, fmt.Errorf("sarama consumer: %w", err)
	}
	defer c.Close()
	got := make([][]testRecord, len(counts))
	for p, want := range counts {
		pc, err := c.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			return got, fmt.Errorf("sarama consume partition %d: %w", p, err)
		}
		for len(got[p]) < want {
			select {
			case m := <-pc.Messages():
				tr := testRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
				for _, h := range m.Headers {
					tr.Headers = append(tr.Headers, testHeader{Key: string(h.Key), Value: h.Value})
				}
				got[p] = append(got[p], tr)
			case err := <-pc.Errors():
				pc.Close()
				return got, fmt.Errorf("sarama partition %d: %w", p, err)
			case <-ctx.Done():
				pc.Close()
				return got, fmt.Errorf("sarama partition %d: read %d of %d: %w", p, len(got[p]), want, ctx.Err())
			}
		}
		if err := pc.Close(); err != nil {
			return got, fmt.Errorf("sarama close partition %d: %w", p, err)
		}
	}
	return got, nil
}
