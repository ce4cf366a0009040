package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/rpc"
)

// Clusters whose nodes do not all hold both roles, as KRaft deployments
// with dedicated controllers: controller-only nodes vote in the metadata
// quorum and are never brokers; broker-only nodes host partitions and
// follow the metadata log without voting.

// awaitBrokerList waits until Metadata lists exactly the brokers want. It
// sends Metadata itself: kadm answers a topic-less Metadata from the
// client's cache, whose broker list may never be refreshed.
func awaitBrokerList(ctx context.Context, t *testing.T, cl *kgo.Client, want []int32) {
	t.Helper()
	var last []int32
	for {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		if resp, err := req.RequestWith(ctx, cl); err == nil {
			last = last[:0]
			for _, b := range resp.Brokers {
				last = append(last, b.NodeID)
			}
			slices.Sort(last)
			if slices.Equal(last, want) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Metadata never listed brokers %v; last %v", want, last)
		case <-time.After(externalPollInterval):
		}
	}
}

// produceNumbered sends records from..to-1 round-robin over partitions
// and waits for every answer.
func produceNumbered(ctx context.Context, t *testing.T, cl *kgo.Client, acks *ackedRecords, topic string, partitions, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(n % partitions), Value: []byte(strconv.Itoa(n))}, acks.record(n))
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if n := acks.failures(); n > 0 {
		_, _, errs := acks.snapshot()
		t.Fatalf("%d records failed: %v", n, errs)
	}
}

func TestClusterDedicatedControllers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Nodes 1-3 are controllers only, 4-6 brokers only. A metadata
	// snapshot every 40 entries lets a returning broker find its next
	// entry compacted away.
	c := startRolesCluster(t,
		[]string{controllerOnly, controllerOnly, controllerOnly, brokerOnly, brokerOnly, brokerOnly},
		nil, node.Options{MetadataSnapshotEvery: 40})
	adm := observerClient(t, c.addrs())
	awaitBrokerList(ctx, t, newSeededClient(t, c.addrs()), []int32{4, 5, 6})

	const topic = "dedicated"
	createReplicatedTopic(ctx, t, adm, topic, 3, 3, nil)
	for p := range int32(3) {
		if r := replicasOf(ctx, t, adm, topic, p); slices.ContainsFunc(r, func(id int32) bool { return id <= 3 }) {
			t.Fatalf("partition %d placed on a controller-only node: replicas %v", p, r)
		}
	}
	prod := idempotentProducer(t, c.addrs())
	acked := newAckedRecords()
	produceNumbered(ctx, t, prod, acked, topic, 3, 0, 150)

	// A broker leading partition 0 dies; a follower takes over.
	victim := awaitPartition(ctx, t, adm, topic, 0, "a leader", func(v partitionView) bool { return v.Leader > 0 }).Leader
	c.kill(int(victim) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "a new leader", func(v partitionView) bool { return v.Leader > 0 && v.Leader != victim })
	produceNumbered(ctx, t, prod, acked, topic, 3, 150, 300)

	// The active controller dies; another controller-only node takes
	// over, every broker follows it, and later changes still apply.
	ctrl := awaitActiveController(ctx, t, c, func(id int32) bool { return id <= 3 })
	c.kill(int(ctrl) - 1)
	newCtrl := awaitActiveController(ctx, t, c, func(id int32) bool { return id <= 3 && id != ctrl })
	t.Logf("controller %d killed, %d took over", ctrl, newCtrl)
	const later = "dedicated-later"
	createReplicatedTopic(ctx, t, adm, later, 1, 2, nil)
	produceNumbered(ctx, t, prod, acked, topic, 3, 300, 450)
	// Enough metadata entries that the dead broker's next one is
	// compacted: it must catch up from a snapshot.
	for i := range 50 {
		v := strconv.Itoa(600000 + i)
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, later); err != nil {
			t.Fatalf("alter configs: %v", err)
		}
	}

	c.start(int(victim) - 1)
	select {
	case <-c.brokers[victim-1].Registered():
	case <-ctx.Done():
		t.Fatalf("broker %d did not register again", victim)
	}
	if n := c.brokers[victim-1].MetadataSnapshotsLoaded(); n < 1 {
		t.Fatalf("broker %d caught up without loading a snapshot; the test meant to exercise one", victim)
	}
	im := c.brokers[victim-1].Image()
	lt, ok := im.Topic(later)
	if !ok || lt.Configs["retention.ms"] != "600049" {
		t.Fatalf("restarted broker %d does not hold the later changes: topic %v, configs %v", victim, ok, lt)
	}
	awaitPartition(ctx, t, adm, topic, 0, "the restarted broker back in the ISR", func(v partitionView) bool { return v.inISR(victim) })

	read := readNumbered(ctx, t, c.addrs(), topic)
	all, n, _ := acked.snapshot()
	if n != 450 {
		t.Fatalf("%d of 450 records acknowledged", n)
	}
	for p := range int32(3) {
		checkExactlyOnceInOrder(t, p, all[p], read[p])
	}
}

func TestClusterCombinedNodesAndBrokerOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startRolesCluster(t, []string{combinedRoles, combinedRoles, combinedRoles, brokerOnly}, nil, node.Options{})
	adm := observerClient(t, c.addrs())
	awaitBrokerList(ctx, t, newSeededClient(t, c.addrs()), []int32{1, 2, 3, 4})

	// The broker-only node leads; the combined nodes follow.
	const topic = "mixed"
	const broker int32 = 4
	createAssignedTopic(ctx, t, newSeededClient(t, c.addrs()), topic, [][]int32{{broker, 1, 2}})
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 leading with a full ISR", func(v partitionView) bool {
		return v.Leader == broker && len(v.ISR) == 3
	})
	prod := idempotentProducer(t, c.addrs())
	acked := newAckedRecords()
	produceNumbered(ctx, t, prod, acked, topic, 1, 0, 100)

	c.kill(int(broker) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "a new leader", func(v partitionView) bool { return v.Leader > 0 && v.Leader != broker })
	produceNumbered(ctx, t, prod, acked, topic, 1, 100, 200)

	c.start(int(broker) - 1)
	awaitPartition(ctx, t, adm, topic, 0, "broker 4 back in the ISR", func(v partitionView) bool { return v.inISR(broker) })
	read := readNumbered(ctx, t, c.addrs(), topic)
	all, n, _ := acked.snapshot()
	if n != 200 {
		t.Fatalf("%d of 200 records acknowledged", n)
	}
	checkExactlyOnceInOrder(t, 0, all[0], read[0])
}

// TestControllerOnlyNodeServesControllerAPIsOnly: a controller-only node
// answers ApiVersions on its controller listener with the controller's
// APIs, and closes a connection that sends it a client request.
func TestControllerOnlyNodeServesControllerAPIsOnly(t *testing.T) {
	c := startRolesCluster(t, []string{controllerOnly, brokerOnly}, nil, node.Options{})
	checkControllerListenerServesControllerAPIsOnly(t, "a controller-only node", strings.TrimPrefix(c.props[0]["listeners"], "CONTROLLER://"))
}

// TestCombinedNodeControllerListenerServesControllerAPIsOnly: so does the
// controller listener of a node that is broker and controller both, as
// in KRaft: a client that reaches it (kafka-go's TestErrorCannotConnect
// dials localhost:9093, `skein dev`'s and Kafka's quickstart controller
// port) is refused, not served as by a broker. Before, every client API
// was served there.
func TestCombinedNodeControllerListenerServesControllerAPIsOnly(t *testing.T) {
	c := startRolesCluster(t, []string{combinedRoles}, nil, node.Options{})
	var addr string
	for _, l := range strings.Split(c.props[0]["listeners"], ",") {
		if a, ok := strings.CutPrefix(l, "CONTROLLER://"); ok {
			addr = a
		}
	}
	checkControllerListenerServesControllerAPIsOnly(t, "a combined node's controller listener", addr)
}

func checkControllerListenerServesControllerAPIsOnly(t *testing.T, what, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := rpc.Dial(ctx, addr, "roles-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var keys []int16
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	for _, want := range []int16{18, 19, 56, 59, 62, 63, 67} {
		if !slices.Contains(keys, want) {
			t.Errorf("ApiVersions of %s lacks %s: %v", what, kmsg.NameForKey(want), keys)
		}
	}
	for _, unwanted := range []int16{0, 3, 2, 10} {
		if slices.Contains(keys, unwanted) {
			t.Errorf("ApiVersions of %s offers %s", what, kmsg.NameForKey(unwanted))
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, err := conn.Request(ctx, md); err == nil {
		t.Fatalf("%s answered Metadata", what)
	}
}

// TestMetadataLogOverTheWire drives a controller's side of the metadata
// log with raw requests: a Fetch from offset 0 once the log was compacted
// names the snapshot; FetchSnapshot serves it in chunks of the size asked
// for; a wrong snapshot id, position or cluster id is refused.
func TestMetadataLogOverTheWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := startRolesCluster(t, []string{controllerOnly, brokerOnly}, nil, node.Options{MetadataSnapshotEvery: 10})
	adm := kadm.NewClient(newSeededClient(t, c.addrs()))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "churn"); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		v := strconv.Itoa(700000 + i)
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "churn"); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := rpc.Dial(ctx, strings.TrimPrefix(c.props[0]["listeners"], "CONTROLLER://"), "metadata-log-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	clusterID := c.props[0]["cluster.id"]

	fetch := func(offset int64, cluster string) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 13
		req.ReplicaID = 99
		req.ClusterID = &cluster
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = [16]byte{15: 1}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset = offset
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.FetchResponse)
	}
	if r := fetch(0, "another-cluster"); r.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("fetch with another cluster id: error %d", r.ErrorCode)
	}
	p := fetch(0, clusterID).Topics[0].Partitions[0]
	if p.SnapshotID.EndOffset <= 0 || len(p.RecordBatches) != 0 || p.CurrentLeader.LeaderID != 1 {
		t.Fatalf("fetch from offset 0 of a compacted log: snapshot %+v, %d bytes of records, leader %d",
			p.SnapshotID, len(p.RecordBatches), p.CurrentLeader.LeaderID)
	}
	// From the log start on, entries come as batches up to the high watermark.
	after := fetch(p.LogStartOffset, clusterID).Topics[0].Partitions[0]
	if after.SnapshotID.EndOffset != -1 || len(after.RecordBatches) == 0 || after.HighWatermark <= p.LogStartOffset {
		t.Fatalf("fetch from the log start %d: snapshot %+v, %d bytes, high watermark %d",
			p.LogStartOffset, after.SnapshotID, len(after.RecordBatches), after.HighWatermark)
	}

	snapshot := func(endOffset int64, epoch int32, position int64, maxBytes int32) kmsg.FetchSnapshotResponseTopicPartition {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.Version = 1
		req.ReplicaID = 99
		req.MaxBytes = maxBytes
		st := kmsg.NewFetchSnapshotRequestTopic()
		st.Topic = "__cluster_metadata"
		sp := kmsg.NewFetchSnapshotRequestTopicPartition()
		sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch, sp.Position = endOffset, epoch, position
		st.Partitions = []kmsg.FetchSnapshotRequestTopicPartition{sp}
		req.Topics = []kmsg.FetchSnapshotRequestTopic{st}
		resp, err := conn.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.FetchSnapshotResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("FetchSnapshot: error %d, %d topics", r.ErrorCode, len(r.Topics))
		}
		return r.Topics[0].Partitions[0]
	}
	id := p.SnapshotID
	whole := snapshot(id.EndOffset, id.Epoch, 0, 1<<20)
	if whole.ErrorCode != 0 || whole.Size == 0 || int64(len(whole.Bytes)) != whole.Size {
		t.Fatalf("whole snapshot: error %d, size %d, %d bytes", whole.ErrorCode, whole.Size, len(whole.Bytes))
	}
	var chunked []byte
	for int64(len(chunked)) < whole.Size {
		part := snapshot(id.EndOffset, id.Epoch, int64(len(chunked)), 100)
		if part.ErrorCode != 0 || len(part.Bytes) == 0 || len(part.Bytes) > 100 {
			t.Fatalf("chunk at %d: error %d, %d bytes", len(chunked), part.ErrorCode, len(part.Bytes))
		}
		chunked = append(chunked, part.Bytes...)
	}
	if !slices.Equal(chunked, whole.Bytes) {
		t.Fatal("the snapshot read in chunks differs from the one read whole")
	}
	if e := snapshot(id.EndOffset, id.Epoch+1, 0, 100).ErrorCode; e != kerr.SnapshotNotFound.Code {
		t.Fatalf("snapshot with a wrong epoch: error %d, want SNAPSHOT_NOT_FOUND", e)
	}
	if e := snapshot(id.EndOffset, id.Epoch, whole.Size+1, 100).ErrorCode; e != kerr.PositionOutOfRange.Code {
		t.Fatalf("snapshot past its end: error %d, want POSITION_OUT_OF_RANGE", e)
	}
}
