package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDropBehindConsumerReadsEverything: with a small page-cache window
// (log.page.cache.window.bytes), the brokers advise the durable log they
// hold out of the page cache as it is produced; a consumer that then reads
// the partition from offset 0 gets every record, byte for byte, from the
// disk.
func TestDropBehindConsumerReadsEverything(t *testing.T) {
	const window = 64 << 10 // drops in steps of 1 MiB
	c := startCluster(t, 3, map[string]string{"log.page.cache.window.bytes": fmt.Sprint(window)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	segment := "1048576" // rolls too: finished segments are advised out whole
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"segment.bytes": &segment}, "dropbehind"); err != nil {
		t.Fatal(err)
	}
	const records = 4096 // about 4 MiB
	produceKiBs(ctx, t, c, "dropbehind", 0, records)
	// Each follower advises out after the fsync that precedes the fetch
	// reporting its log end, so before the last records were
	// acknowledged (the leader's advice follows its fsync's answers).
	var dropped float64
	for _, b := range c.brokers {
		dropped += droppedBytes(t, b)
	}
	if dropped < 1<<20 {
		t.Fatalf("%v bytes advised out of the page cache over three brokers; want at least one step (1 MiB)", dropped)
	}
	consumeKiBs(ctx, t, c, "dropbehind", records)
}

// TestPageCacheBudgetConsumerReadsEverything: with a broker-wide budget
// (log.page.cache.broker.bytes) of 3 MiB and windows of 4 MiB, a topic of
// about 2 MiB stays within both until another topic is written; then the
// brokers advise the idle topic's log out (nothing else is outside a
// window, so every byte the metric counts is the budget's), and a consumer
// from offset 0 still gets every record of it, byte for byte.
func TestPageCacheBudgetConsumerReadsEverything(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"log.page.cache.window.bytes": fmt.Sprint(4 << 20),
		"log.page.cache.broker.bytes": fmt.Sprint(3 << 20),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	for _, topic := range []string{"idle", "busy"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const records = 2048 // about 2 MiB
	produceKiBs(ctx, t, c, "idle", 0, records)
	total := func() (n float64) {
		for _, b := range c.brokers {
			n += droppedBytes(t, b)
		}
		return n
	}
	if n := total(); n != 0 {
		t.Fatalf("%v bytes advised out with one topic within the budget", n)
	}
	// Each produce is a new fsync noted on every broker: once the two
	// topics pass the budget (busy past 1 MiB), a note wakes the broker's
	// run. Written until the runs are seen on every broker, at most 12
	// rounds (3 MiB): busy stays within its own window, so its own
	// drop-behind advises nothing out, and without the budget nothing is.
	for round := 0; ; round++ {
		shrunk := 0
		for _, b := range c.brokers {
			if droppedBytes(t, b) > 0 {
				shrunk++
			}
		}
		if shrunk == len(c.brokers) {
			break
		}
		if round == 12 {
			t.Fatalf("%d of %d brokers advised anything out with 2 MiB over the budget", shrunk, len(c.brokers))
		}
		produceKiBs(ctx, t, c, "busy", round*256, 256)
	}
	consumeKiBs(ctx, t, c, "idle", records)
}

// kib is record i of produceKiBs: about 1 KiB, its number first.
func kib(i int) []byte {
	v := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 512)
	return fmt.Appendf(v[:0:0], "%06d:%s", i, v)
}

// produceKiBs produces records from..from+n-1 (kib) to topic's
// partition 0, acks=all, uncompressed (so the log holds what is produced),
// in rounds of 256.
func produceKiBs(ctx context.Context, t *testing.T, c *testCluster, topic string, from, n int) {
	t.Helper()
	producer := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer producer.Close()
	for round := from; round < from+n; round += 256 {
		rs := make([]*kgo.Record, 0, 256)
		for i := round; i < min(round+256, from+n); i++ {
			rs = append(rs, &kgo.Record{Value: kib(i)})
		}
		if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeKiBs reads topic from offset 0 and checks that it holds
// records 0..n-1 of produceKiBs, in order.
func consumeKiBs(ctx context.Context, t *testing.T, c *testCluster, topic string, n int) {
	t.Helper()
	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	next := 0
	for next < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", next, n, topic, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch %s: %v", topic, errs)
		}
		for _, r := range fs.Records() {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, kib(next)) {
				t.Fatalf("%s: record at offset %d (want %d) differs from the one produced", topic, r.Offset, next)
			}
			next++
		}
	}
}

// droppedBytes reads a broker's skein_log_page_cache_dropped_bytes_total.
func droppedBytes(t *testing.T, b *node.Broker) float64 {
	t.Helper()
	families, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "skein_log_page_cache_dropped_bytes_total" && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no skein_log_page_cache_dropped_bytes_total series")
	return 0
}
