package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// clientEnv is what a client driver needs to reach the broker.
type clientEnv struct {
	addr string
	kcat string // path of kcat, set only when a subtest uses it
}

// clientDriver produces and consumes a recordSet with one client library.
type clientDriver struct {
	name string
	// perRecordHeaders is false for kcat, which can only send the same
	// headers with every record of a run.
	perRecordHeaders bool
	produce          func(ctx context.Context, env clientEnv, rs *recordSet, codec string, variant int) error
	consume          func(ctx context.Context, env clientEnv, topic string, counts []int) ([][]testRecord, error)
}

// variantName names a producer variant for the subtest name; sarama is
// idempotent in odd variants.
func (d clientDriver) variantName(variant int) string {
	if d.name == "sarama" && variant%2 == 1 {
		return "sarama-idempotent"
	}
	return d.name
}

var clientDrivers = []clientDriver{
	{
		name: "franz", perRecordHeaders: true,
		produce: func(ctx context.Context, env clientEnv, rs *recordSet, codec string, _ int) error {
			return franzProduce(ctx, env.addr, rs, codec)
		},
		consume: func(ctx context.Context, env clientEnv, topic string, counts []int) ([][]testRecord, error) {
			return franzConsume(ctx, env.addr, topic, counts)
		},
	},
	{
		name: "sarama", perRecordHeaders: true,
		produce: func(ctx context.Context, env clientEnv, rs *recordSet, codec string, variant int) error {
			return saramaProduce(ctx, env.addr, rs, codec, variant%2 == 1)
		},
		consume: func(ctx context.Context, env clientEnv, topic string, counts []int) ([][]testRecord, error) {
			return saramaConsume(ctx, env.addr, topic, counts)
		},
	},
	{
		name: "kafka-go", perRecordHeaders: true,
		produce: func(ctx context.Context, env clientEnv, rs *recordSet, codec string, _ int) error {
			return kafkaGoProduce(ctx, env.addr, rs, codec)
		},
		consume: func(ctx context.Context, env clientEnv, topic string, counts []int) ([][]testRecord, error) {
			return kafkaGoConsume(ctx, env.addr, topic, counts)
		},
	},
	{
		name: "kcat", perRecordHeaders: false,
		produce: func(ctx context.Context, env clientEnv, rs *recordSet, codec string, _ int) error {
			return kcatProduce(ctx, env.kcat, env.addr, rs, codec)
		},
		consume: func(ctx context.Context, env clientEnv, topic string, counts []int) ([][]testRecord, error) {
			return kcatConsume(ctx, env.kcat, env.addr, topic, counts)
		},
	},
}

// matrixRecordsPerRun times the five codecs makes 10,000 records produced by
// each client, and (by the rotation below) 10,000 consumed by each.
const matrixRecordsPerRun = 2000

// TestClientMatrix produces with every client and every codec and reads the
// records back with a different client: each producer is read by each of
// the three others across its codecs, and each consumer decodes all five
// codecs. Every record must come back once, in order per partition, with
// identical key, value and headers, and be stored with the codec it was
// sent with.
func TestClientMatrix(t *testing.T) {
	tb := startBroker(t)
	for pi, producer := range clientDrivers {
		for ci, codec := range codecs {
			// Offsets 1, 2, 3, 1, 2 from the producer: never itself.
			consumer := clientDrivers[(pi+1+ci%3)%len(clientDrivers)]
			name := fmt.Sprintf("%s/%s/read-by-%s", producer.variantName(ci), codec, consumer.name)
			t.Run(name, func(t *testing.T) {
				env := clientEnv{addr: tb.addr}
				if producer.name == "kcat" || consumer.name == "kcat" {
					env.kcat = requireCommand(t, "kcat")
				}
				topic := fmt.Sprintf("matrix-%s-%s", producer.variantName(ci), codec)
				const partitions = 3
				tb.createTopic(topic, partitions, nil)
				rs := makeRecords(topic, partitions, matrixRecordsPerRun, producer.perRecordHeaders)
				ctx := testContext(t, 45*time.Second)

				if err := producer.produce(ctx, env, rs, codec, ci); err != nil {
					t.Fatalf("produce: %v", err)
				}
				requireEndOffsets(ctx, t, tb, topic, rs.counts())
				got, err := consumer.consume(ctx, env, topic, rs.counts())
				if err != nil {
					t.Fatalf("consume: %v", err)
				}
				verifyRecords(t, rs, got)
				requireStoredCodec(ctx, t, tb.addr, rs, codec)
			})
		}
	}
}

// requireEndOffsets checks each partition's high watermark: exactly the
// records produced, so no duplicates hide past what a consumer reads.
func requireEndOffsets(ctx context.Context, t *testing.T, tb *testBroker, topic string, counts []int) {
	t.Helper()
	adm := kadm.NewClient(tb.client())
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	for p, want := range counts {
		o, ok := ends.Lookup(topic, int32(p))
		if !ok || o.Err != nil {
			t.Fatalf("end offset of %s/%d: found=%v err=%v", topic, p, ok, o.Err)
		}
		if o.Offset != int64(want) {
			t.Errorf("end offset of %s/%d = %d, want %d", topic, p, o.Offset, want)
		}
	}
}

// requireStoredCodec checks the codec of the stored batches: all
// uncompressed for "none"; otherwise at least one batch in the codec and
// none in another codec (a producer may send a batch uncompressed when
// compressing does not help, librdkafka does).
func requireStoredCodec(ctx context.Context, t *testing.T, addr string, rs *recordSet, codec string) {
	t.Helper()
	counts, err := storedCodecs(ctx, addr, rs)
	if err != nil {
		t.Fatalf("read batches for codec check: %v", err)
	}
	want := codecAttribute[codec]
	for c, n := range counts {
		if c != want && c != 0 {
			t.Errorf("%d batches stored with codec %d, want only %d (%s)", n, c, want, codec)
		}
	}
	if counts[want] == 0 {
		t.Errorf("no batch stored with codec %d (%s); batches by codec: %v%s", want, codec, counts, codecHint(codec))
	}
}

// codecHint explains the known reason librdkafka stops compressing.
func codecHint(codec string) string {
	switch codec {
	case "gzip", "snappy", "lz4":
		return "\nlibrdkafka <= 2.11.0 (kcat) sends gzip, snappy and lz4 uncompressed unless the broker " +
			"advertises Produce v0 (it asks for Produce in [0,0]); lz4 also needs FindCoordinator v0 advertised"
	}
	return ""
}
