package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/skein-log/skein/internal/batch"
)

// txnPartition drives one partition as a transaction coordinator would,
// with raw requests: transactional batches produced under a transactional
// id, WriteTxnMarkers to end them.
type txnPartition struct {
	t   *testing.T
	ctx context.Context
	cl  *kgo.Client
	// to is where produces and markers go: the client (a single
	// broker), or the partition leader's connection.
	to    kmsg.Requestor
	topic string
	id    [16]byte // Produce v13 names topics by id
	pid   int64
	epoch int16
	seq   int32
}

func (p *txnPartition) produce(values ...string) {
	p.t.Helper()
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	b := batch.BuildTransactional(vs, time.Now().UnixMilli(), p.pid, p.epoch, p.seq)
	if code := p.produceBatch(b); code != nil {
		p.t.Fatalf("produce %v: %v", values, code)
	}
	p.seq += int32(len(values))
}

// produceBatch sends one batch under the transactional id and returns the
// partition's error.
// produceBeforeKIP890p2 keeps a client's Produce at v11: these tests
// write their own markers for a transaction no coordinator knows, as a
// client before KIP-890 part 2 does with verification off; from v12 with
// transaction.version 2 the leader adds the partition through the
// coordinator, which knows no such transaction.
func produceBeforeKIP890p2() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	return kgo.MaxVersions(v)
}

func (p *txnPartition) produceBatch(b []byte) error {
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr("e2e-txn")
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = p.topic, p.id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(p.ctx, p.to)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// marker writes a COMMIT or ABORT marker as the coordinator of coordEpoch
// and returns the partition's error.
func (p *txnPartition) marker(commit bool, coordEpoch int32) error {
	p.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = p.pid, p.epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = p.topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(p.ctx, p.to)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Markers[0].Topics[0].Partitions[0].ErrorCode)
}

// consumeValues reads the partition from the start with franz-go at the
// given isolation level until it has n records.
func consumeValues(t *testing.T, ctx context.Context, tb *testBroker, topic string, n int, iso kgo.IsolationLevel) []string {
	t.Helper()
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(iso))
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v, want %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func listOffset(t *testing.T, ctx context.Context, cl kmsg.Requestor, topic string, isolation int8) int64 {
	t.Helper()
	off, err := listOffsetErr(t, ctx, cl, topic, isolation)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// listOffsetErr is listOffset with the partition's error returned.
func listOffsetErr(t *testing.T, ctx context.Context, cl kmsg.Requestor, topic string, isolation int8) (int64, error) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	return sp.Offset, kerr.ErrorForCode(sp.ErrorCode)
}

// TestTransactionsPartitionSide plays the coordinator's part with raw
// requests (the coordinator itself is not part of this test) and reads
// with franz-go: a read_committed consumer gets committed records and
// records outside transactions, never an aborted one, and nothing past an
// open transaction's first offset; read_uncommitted gets everything.
// Without a coordinator there is nothing to verify the batches with, so
// KIP-890's verification is off (txn_verify_test.go has it on).
func TestTransactionsPartitionSide(t *testing.T) {
	tb := startBroker(t, withProp("transaction.partition.verification.enable", "false"))
	const topic = "txn-partition"
	tb.createTopic(topic, 1, nil)
	ctx := testContext(t, 30*time.Second)
	cl := tb.client(produceBeforeKIP890p2())

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60_000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p := &txnPartition{t: t, ctx: ctx, cl: cl, to: cl, topic: topic, id: md.Topics[topic].ID, pid: ir.ProducerID, epoch: ir.ProducerEpoch}

	p.produce("aborted-1", "aborted-2")
	if err := p.marker(false, 5); err != nil {
		t.Fatalf("abort marker: %v", err)
	}
	plain := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.produce("committed-1")
	p.produce("committed-2")
	if err := p.marker(true, 5); err != nil {
		t.Fatalf("commit marker: %v", err)
	}
	// A marker from an older coordinator epoch is fenced.
	if err := p.marker(true, 4); err != kerr.TransactionCoordinatorFenced {
		t.Fatalf("marker of coordinator epoch 4 after 5: %v, want TRANSACTION_COORDINATOR_FENCED", err)
	}
	// A transaction left open: the LSO stops at its first offset.
	openAt := listOffset(t, ctx, cl, topic, 0)
	p.produce("open-1")
	if hw, lso := listOffset(t, ctx, cl, topic, 0), listOffset(t, ctx, cl, topic, 1); hw != openAt+1 || lso != openAt {
		t.Fatalf("high watermark %d, last stable offset %d; want %d and %d", hw, lso, openAt+1, openAt)
	}
	// DescribeProducers names the open transaction's first offset.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = topic, []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, ap := range dresp.Topics[0].Partitions[0].ActiveProducers {
		if ap.ProducerID == p.pid {
			found = true
			if ap.CurrentTxnStartOffset != openAt || ap.CoordinatorEpoch != 5 {
				t.Fatalf("DescribeProducers: transaction start %d, coordinator epoch %d; want %d and 5", ap.CurrentTxnStartOffset, ap.CoordinatorEpoch, openAt)
			}
		}
	}
	if !found {
		t.Fatalf("DescribeProducers does not list producer %d: %+v", p.pid, dresp.Topics[0].Partitions[0])
	}
	// Kafka's INVALID_TXN_STATE: a non-transactional batch of a producer
	// with an open transaction.
	if err := p.produceBatch(batch.BuildProducer([][]byte{[]byte("x")}, time.Now().UnixMilli(), p.pid, p.epoch, p.seq)); err != kerr.InvalidTxnState {
		t.Fatalf("idempotent batch inside a transaction: %v, want INVALID_TXN_STATE", err)
	}

	got := consumeValues(t, ctx, tb, topic, 3, kgo.ReadCommitted())
	if want := []string{"plain", "committed-1", "committed-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed got %q, want %q", got, want)
	}
	// A second client's implementation of the same rule: sarama.
	scfg := saramaConfig()
	scfg.Consumer.IsolationLevel = sarama.ReadCommitted
	scfg.Consumer.Return.Errors = true
	sc, err := sarama.NewConsumer([]string{tb.addr}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	spc, err := sc.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	var sgot []string
	for len(sgot) < 3 {
		select {
		case m := <-spc.Messages():
			sgot = append(sgot, string(m.Value))
		case err := <-spc.Errors():
			t.Fatalf("sarama: %v", err)
		case <-ctx.Done():
			t.Fatalf("sarama read_committed read %q: %v", sgot, ctx.Err())
		}
	}
	spc.Close()
	sc.Close()
	if want := []string{"plain", "committed-1", "committed-2"}; !slices.Equal(sgot, want) {
		t.Fatalf("sarama read_committed got %q, want %q", sgot, want)
	}
	got = consumeValues(t, ctx, tb, topic, 6, kgo.ReadUncommitted())
	if want := []string{"aborted-1", "aborted-2", "plain", "committed-1", "committed-2", "open-1"}; !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted got %q, want %q", got, want)
	}

	// The coordinator bumps the epoch and aborts (a fenced producer's
	// transaction): the old epoch's batches are refused from then on.
	p.epoch++
	if err := p.marker(false, 5); err != nil {
		t.Fatalf("abort with a bumped epoch: %v", err)
	}
	old := batch.BuildTransactional([][]byte{[]byte("zombie")}, time.Now().UnixMilli(), p.pid, p.epoch-1, p.seq)
	if err := p.produceBatch(old); err != kerr.InvalidProducerEpoch {
		t.Fatalf("batch of the fenced epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if hw, lso := listOffset(t, ctx, cl, topic, 0), listOffset(t, ctx, cl, topic, 1); lso != hw {
		t.Fatalf("after the last abort: high watermark %d, last stable offset %d", hw, lso)
	}
	// After a restart (the producer state and the aborted-transaction
	// index come back from the log) the same records are read.
	tb.restart()
	got = consumeValues(t, ctx, tb, topic, 3, kgo.ReadCommitted())
	if want := []string{"plain", "committed-1", "committed-2"}; !slices.Equal(got, want) {
		t.Fatalf("after restart read_committed got %q, want %q", got, want)
	}
}

// TestClusterTransactionSurvivesLeaderFailover: a transaction open on a
// partition of three replicas when its leader crashes is still open on the
// new leader (a follower that kept the producer state from the batches it
// copied): the last stable offset stays at its first offset, the
// producer's sequence continues there, and the coordinator's marker,
// retried at the new leader, ends it; read_committed readers see exactly
// the committed transactions. The test plays the coordinator, so the
// leaders do not verify with one (KIP-890 part 1 off).
func TestClusterTransactionSurvivesLeaderFailover(t *testing.T) {
	c := startCluster(t, 3, map[string]string{"transaction.partition.verification.enable": "false"})
	ctx := testContext(t, 60*time.Second)
	const topic = "txn-failover"
	adm := kadm.NewClient(c.client())
	min2 := "2"
	if resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &min2}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	cl := c.client(produceBeforeKIP890p2())
	init := kmsg.NewPtrInitProducerIDRequest()
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.leaderOf(ctx, topic, 0)
	p := &txnPartition{t: t, ctx: ctx, cl: cl, to: cl.Broker(int(leader)), topic: topic, id: md.Topics[topic].ID, pid: ir.ProducerID, epoch: ir.ProducerEpoch}
	p.produce("committed-1")
	if err := p.marker(true, 0); err != nil {
		t.Fatal(err)
	}
	openAt := listOffset(t, ctx, cl, topic, 0)
	p.produce("committed-2")

	c.kill(int(leader) - 1)
	newLeader := c.leaderOf(ctx, topic, 0)
	for newLeader == leader {
		newLeader = c.leaderOf(ctx, topic, 0)
	}
	c.awaitDeposed(ctx, topic, 0, newLeader)
	p.to = cl.Broker(int(newLeader))
	// The new leader has the open transaction: once its high watermark
	// covers the transaction's batch, its LSO still waits at it. (The
	// metadata may name the new leader before it has applied its own
	// leadership: NOT_LEADER_OR_FOLLOWER until then.)
	for {
		hw, err := listOffsetErr(t, ctx, p.to, topic, 0)
		if err != nil && !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatal(err)
		}
		if err == nil && hw > openAt {
			break
		}
		select { // the new leader's HW rises once the ISR reports
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if lso := listOffset(t, ctx, p.to, topic, 1); lso != openAt {
		t.Fatalf("new leader's last stable offset %d, want the open transaction's first offset %d", lso, openAt)
	}
	// The sequence continues on the new leader: the producer state came
	// with the replicated batches.
	p.produce("committed-3")
	for {
		err := p.marker(true, 0)
		if err == nil {
			break
		}
		if !kerr.IsRetriable(err) {
			t.Fatalf("commit marker at the new leader: %v", err)
		}
	}
	p.produce("aborted-1")
	if err := p.marker(false, 0); err != nil {
		t.Fatal(err)
	}
	plain := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("end")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	for !slices.Contains(got, "end") {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %q: %v", got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := []string{"committed-1", "committed-2", "committed-3", "end"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after failover got %q, want %q", got, want)
	}
}
