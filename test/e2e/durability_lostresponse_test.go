package e2e

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLostProduceResponse writes through a proxy that loses the answers to
// some Produce requests after the broker appended them. The client retries
// each such batch on a new connection. An idempotent producer's retry
// carries the same producer id and sequence, so the broker must recognise it
// and store nothing twice; a non-idempotent producer's retry is a new write
// and is stored again.
func TestLostProduceResponse(t *testing.T) {
	const (
		batches         = 20
		recordsPerBatch = 10
		total           = batches * recordsPerBatch
	)
	// Produce request ordinals whose answers are lost. With one synchronous
	// batch at a time, each is a distinct batch, and its retry is the
	// next request (not itself dropped).
	dropped := []int{3, 8, 15}

	cases := []struct {
		name       string
		opts       []kgo.Opt
		idempotent bool
	}{
		{name: "idempotent", idempotent: true},
		{name: "non-idempotent", opts: []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks())}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			proxy := newFaultProxy(t)
			tb := startBroker(t, withProp("advertised.listeners", "PLAINTEXT://"+proxy.addr()))
			proxy.start(tb.addr)
			const topic = "lost-response"
			tb.createTopic(topic, 1, nil)
			proxy.dropProduceResponses(dropped...)

			ctx := testContext(t, 45*time.Second)
			producer := tb.client(append([]kgo.Opt{
				kgo.SeedBrokers(proxy.addr()),
				kgo.DefaultProduceTopic(topic),
				kgo.RecordRetries(10),
			}, tc.opts...)...)
			for b := range batches {
				recs := make([]*kgo.Record, recordsPerBatch)
				for i := range recs {
					recs[i] = &kgo.Record{Value: binary.BigEndian.AppendUint32(nil, uint32(b*recordsPerBatch+i))}
				}
				if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatalf("batch %d: %v", b, err)
				}
			}
			if got := proxy.droppedResponses(); got != len(dropped) {
				t.Fatalf("proxy lost %d responses, want %d", got, len(dropped))
			}

			values := readAllValues(t, tb, topic)
			seen := map[uint32]int{}
			for _, v := range values {
				seen[binary.BigEndian.Uint32(v)]++
			}
			for i := range uint32(total) {
				if seen[i] == 0 {
					t.Errorf("record %d is missing", i)
				}
			}
			t.Logf("%s: %d records produced, %d stored, %d responses lost", tc.name, total, len(values), len(dropped))
			if tc.idempotent {
				if len(values) != total {
					t.Fatalf("stored %d records, want exactly %d (idempotent retries must not duplicate)", len(values), total)
				}
				for i, v := range values {
					if got := binary.BigEndian.Uint32(v); got != uint32(i) {
						t.Fatalf("offset %d holds record %d, want %d", i, got, i)
					}
				}
				return
			}
			// A non-idempotent retry of a batch that was written is a
			// second write: every lost answer costs one duplicate batch
			// (one batch in flight at a time makes this exact).
			if want := total + len(dropped)*recordsPerBatch; len(values) != want {
				t.Fatalf("stored %d records, want %d (each retried batch stored twice)", len(values), want)
			}
		})
	}
}

// readAllValues reads a single-partition topic from the start up to its
// high watermark, going straight to the broker.
func readAllValues(t *testing.T, tb *testBroker, topic string) [][]byte {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	end := endOffset(t, tb, topic, 0)
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var out [][]byte
	for int64(len(out)) < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: %d of %d records: %v", topic, len(out), end, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(out)) {
				t.Fatalf("record at offset %d, want %d (gap)", r.Offset, len(out))
			}
			out = append(out, r.Value)
		})
	}
	return out
}
