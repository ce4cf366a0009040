package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// testContext is a context bounded by d (at most a minute, the suite's
// ceiling for any single wait) and cancelled when the test ends.
func testContext(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), min(d, time.Minute))
	t.Cleanup(cancel)
	return ctx
}

// endOffset is a partition's high watermark, asked with ListOffsets.
func endOffset(t testing.TB, tb *testBroker, topic string, partition int32) int64 {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	ends, err := kadm.NewClient(tb.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, partition)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s/%d: found=%v err=%v", topic, partition, ok, o.Err)
	}
	return o.Offset
}
