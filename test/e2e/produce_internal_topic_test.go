package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceToInternalTopicRefused: a client's Produce to
// __consumer_offsets or __transaction_state is refused with
// INVALID_TOPIC_EXCEPTION, as Kafka refuses it ("cannot append to internal
// topic"): only the coordinators write there, and a client's batch would be
// replayed as coordinator state.
func TestProduceToInternalTopicRefused(t *testing.T) {
	tb := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := tb.client()
	for _, c := range []struct {
		topic   string
		keyType int8
		key     string
	}{{"__consumer_offsets", 0, "some-group"}, {"__transaction_state", 1, "some-txn"}} {
		// FindCoordinator creates the internal topic; asked again until it
		// is served.
		for {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKey = c.keyType, c.key
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("FindCoordinator for %s: %v", c.topic, err)
			}
			if resp.ErrorCode == 0 {
				break
			}
		}
		p := dialRaw(t, tb.addr)
		res := produceResult(t, p, produceRequest(7, 1, c.topic, 0, recordsBatch(1, 16)), 1)
		if res.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("produce to %s: error %d, want INVALID_TOPIC_EXCEPTION (%d)", c.topic, res.ErrorCode, kerr.InvalidTopicException.Code)
		}
		p.nc.Close()
	}
}
