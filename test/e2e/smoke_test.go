package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSmokeProduceConsumeRestart is the shortest end-to-end path: produce
// with franz-go's defaults (idempotent, acks=all), restart, read back.
func TestSmokeProduceConsumeRestart(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("smoke", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := tb.client()
	const n = 500
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: "smoke", Value: []byte{byte(i), byte(i >> 8)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.Close()
	tb.restart()
	consumer := tb.client(kgo.ConsumeTopics("smoke"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if got != n {
		t.Fatalf("read %d records, want %d", got, n)
	}
}
