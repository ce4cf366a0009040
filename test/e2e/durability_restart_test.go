package e2e

import (
	"encoding/binary"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCleanRestartMidStream restarts the broker cleanly twice while one
// idempotent producer (franz-go's defaults, acks=all) writes a fixed number
// of records. The producer rides through the restarts with its retries; a
// batch the broker appended but could not answer before closing is retried
// after the restart with the same producer id and sequence, so the broker
// must still know that producer's last sequences after restarting. In the
// end every record is stored exactly once, in order within its partition.
func TestCleanRestartMidStream(t *testing.T) {
	tb := startBroker(t)
	const topic = "clean-restart"
	tb.createTopic(topic, numberedPartitions, nil)
	const (
		total     = 30000
		chunkSize = 1000
	)
	restartAfterChunks := []int{4, 17}

	ctx := testContext(t, time.Minute)
	cl := tb.client(
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond),
		// Small batches: many of them are in flight at a restart.
		kgo.ProducerBatchMaxBytes(4<<10),
	)
	acks := newAckLog()
	var (
		errMu    sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
			return
		}
		acks.ack(r)
	}
	// Records go out in chunks; right after a restart chunk is handed to
	// the client (buffered, in flight, some perhaps answered) the broker
	// restarts, so the restart always lands mid-stream.
	n := uint64(0)
	for chunk := range total / chunkSize {
		for range chunkSize {
			r := &kgo.Record{Partition: int32(n % numberedPartitions), Value: binary.BigEndian.AppendUint64(nil, n)}
			cl.Produce(ctx, r, promise)
			n++
		}
		if slices.Contains(restartAfterChunks, chunk) {
			// Restart once the chunks before this one are answered,
			// so the producer is well under way.
			select {
			case <-acks.notifyAt(chunk * chunkSize):
			case <-ctx.Done():
				t.Fatalf("chunks before %d not acknowledged: %v", chunk, ctx.Err())
			}
			start := time.Now()
			tb.restart()
			t.Logf("restarted after chunk %d with %d of %d records acknowledged (restart took %v)", chunk, acks.total(), n, time.Since(start))
		}
	}
	flushStart := time.Now()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	errMu.Lock()
	if firstErr != nil {
		t.Fatalf("a record failed: %v", firstErr)
	}
	errMu.Unlock()
	t.Logf("flushed in %v", time.Since(flushStart))
	if got := acks.total(); got != total {
		t.Fatalf("%d records acknowledged, want %d", got, total)
	}

	stored := verifyAcknowledged(t, tb.addr, topic, acks)
	for p := range int32(numberedPartitions) {
		values := stored[p]
		want := (total - int(p) + numberedPartitions - 1) / numberedPartitions
		if len(values) != want {
			t.Errorf("partition %d holds %d records, want %d", p, len(values), want)
		}
		for off, n := range values {
			if want := uint64(off)*numberedPartitions + uint64(p); n != want {
				t.Fatalf("partition %d offset %d holds record %d, want %d (reordered or duplicated)", p, off, n, want)
			}
		}
	}
}
