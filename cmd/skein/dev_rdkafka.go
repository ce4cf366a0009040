//go:build cgo && rdkafka

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/skein-log/skein/internal/devcluster"
)

// A build with cgo and -tags rdkafka can measure failover with librdkafka
// (the copy confluent-kafka-go bundles) as well as franz-go. The release
// binary stays pure Go: this file is left out of it.
func init() {
	failoverClients["librdkafka"] = func(debugLog io.Writer) devcluster.NewFailoverProducer {
		return func(c *devcluster.Cluster) (devcluster.FailoverProducer, error) {
			return newRdkafkaProducer(c, debugLog)
		}
	}
}

// rdkafkaProducer is a confluent-kafka-go producer with librdkafka's
// default settings (acks=all, linger.ms=5, no idempotence); only where
// its log goes is set.
type rdkafkaProducer struct {
	p     *ckafka.Producer
	topic string
	logs  chan struct{} // closed when the log copier has drained
}

func newRdkafkaProducer(c *devcluster.Cluster, debugLog io.Writer) (*rdkafkaProducer, error) {
	cfg := ckafka.ConfigMap{
		"bootstrap.servers": strings.Join(c.Addrs(), ","),
		// Its log lines (a killed broker's refused connections, say) go
		// to debugLog, or nowhere, rather than into the measurement's
		// output.
		"go.logs.channel.enable": true,
	}
	if debugLog != nil {
		if err := cfg.SetKey("debug", "broker,topic,metadata,msg,protocol"); err != nil {
			return nil, fmt.Errorf("librdkafka debug: %w", err)
		}
	}
	p, err := ckafka.NewProducer(&cfg)
	if err != nil {
		return nil, fmt.Errorf("librdkafka producer: %w", err)
	}
	r := &rdkafkaProducer{p: p, topic: devcluster.FailoverTopic, logs: make(chan struct{})}
	go func() {
		defer close(r.logs)
		for l := range p.Logs() {
			if debugLog != nil {
				fmt.Fprintf(debugLog, "%s %s %s %s\n", l.Timestamp.UTC().Format("15:04:05.000000"), l.Name, l.Tag, l.Message)
			}
		}
	}()
	return r, nil
}

func (r *rdkafkaProducer) Produce(ctx context.Context, value []byte) error {
	done := make(chan ckafka.Event, 1)
	msg := &ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &r.topic, Partition: 0}, Value: value}
	if err := r.p.Produce(msg, done); err != nil {
		return fmt.Errorf("librdkafka produce: %w", err)
	}
	select {
	case ev := <-done:
		m, ok := ev.(*ckafka.Message)
		if !ok {
			return fmt.Errorf("librdkafka delivery report: unexpected %v", ev)
		}
		if m.TopicPartition.Error != nil {
			return fmt.Errorf("librdkafka delivery: %w", m.TopicPartition.Error)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SinceMetadata: librdkafka does not tell, and needs no wait: it asks for
// metadata whenever a leader is unknown or a produce fails so, at most
// every retry.backoff.ms.
func (r *rdkafkaProducer) SinceMetadata() time.Duration { return time.Duration(1<<63 - 1) }

// rdkafkaSteady: librdkafka doubles a broker's reconnect backoff at every
// connection attempt (reconnect.backoff.ms 100 ms, up to
// reconnect.backoff.max.ms 10 s) and starts again from 100 ms only when
// its last scheduled attempt is over reconnect.backoff.max.ms old. The
// new leader after a kill is the broker killed and restarted the kill
// before (the first in-sync replica in replica order), which the client
// tried to reach while it was down; a kill sooner than that would make
// the client wait out a backoff grown over earlier kills, measuring the
// cadence of the kills rather than one failover. Twice the maximum, plus
// a second, covers the longest scheduled attempt and the quiet time.
const rdkafkaSteady = 21 * time.Second

func (r *rdkafkaProducer) Steady() time.Duration { return rdkafkaSteady }

func (r *rdkafkaProducer) Close() {
	r.p.Close()
	<-r.logs
}
