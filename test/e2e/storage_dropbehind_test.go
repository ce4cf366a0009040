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
	value := func(i int) []byte {
		v := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 512)
		return fmt.Appendf(v[:0:0], "%06d:%s", i, v)
	}
	const records = 4096 // about 4 MiB
	producer := c.client(kgo.DefaultProduceTopic("dropbehind"), kgo.RequiredAcks(kgo.AllISRAcks()),
		// Uncompressed, so the log holds the 4 MiB produced.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for round := 0; round < records; round += 256 {
		rs := make([]*kgo.Record, 0, 256)
		for i := round; i < round+256; i++ {
			rs = append(rs, &kgo.Record{Value: value(i)})
		}
		if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
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

	consumer := c.client(kgo.ConsumeTopics("dropbehind"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := 0
	for next < records {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", next, records, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		for _, r := range fs.Records() {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, value(next)) {
				t.Fatalf("record at offset %d (want %d) differs from the one produced", r.Offset, next)
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
