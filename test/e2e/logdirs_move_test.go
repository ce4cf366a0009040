package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestAlterReplicaLogDirsWhileProducing moves a partition between the two
// log.dirs of a broker with kadm's AlterReplicaLogDirs while a producer
// keeps writing (acks=all, idempotent), watches DescribeLogDirs until the
// replica is in the new directory alone, and reads back every
// acknowledged record, in order and once, before and after a restart.
func TestAlterReplicaLogDirsWhileProducing(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	tb := startBroker(t, withProp("log.dirs", d1+","+d2))
	ctx := testContext(t, 60*time.Second)
	const topic = "moving"
	seg := "16384"
	tb.createTopic(topic, 1, map[string]*string{"segment.bytes": &seg})
	adm := kadm.NewClient(tb.client())

	where := func() (string, kadm.DescribedLogDirs) {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatalf("describe log dirs: %v", err)
		}
		cur := ""
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if !p.IsFuture {
				cur = p.Dir
			}
		})
		return cur, dirs
	}
	from, _ := where()
	to := d2
	if filepath.Clean(from) == d2 {
		to = d1
	}

	pr := &ackedProducer{t: t, cl: tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))}
	pr.produce(ctx, 3000, "before")
	stop := pr.background(ctx, 50)

	var req kadm.AlterReplicaLogDirsReq
	req.Add(to, kadm.TopicsSet{topic: {0: {}}})
	resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatalf("alter replica log dirs: %v", err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Errorf("move to %s: %v", to, r.Err)
		}
	})
	// Each alone: an answer names only its partition, so a client
	// cannot tell two directories asked for one partition apart.
	var nowhere kadm.AlterReplicaLogDirsReq
	nowhere.Add(filepath.Join(base, "nowhere"), kadm.TopicsSet{topic: {0: {}}})
	nresps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, nowhere)
	if err != nil {
		t.Fatal(err)
	}
	nresps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if !errors.Is(r.Err, kerr.LogDirNotFound) {
			t.Errorf("move to an unknown directory: %v, want LOG_DIR_NOT_FOUND", r.Err)
		}
	})
	var unknown kadm.AlterReplicaLogDirsReq
	unknown.Add(to, kadm.TopicsSet{"no-such-topic": {0: {}}})
	uresps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, unknown)
	if err != nil {
		t.Fatal(err)
	}
	uresps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("unknown topic: %v", r.Err)
		}
	})

	awaitReplicaDir(ctx, t, adm, 1, topic, to)
	stop()
	pr.produce(ctx, 200, "after")
	acked := pr.acked
	if t.Failed() {
		return
	}
	if _, err := os.Stat(filepath.Join(from, topic+"-0")); !os.IsNotExist(err) {
		t.Fatalf("old replica directory still there: %v", err)
	}

	check := func(label string) {
		recs := consumeAll(ctx, t, tb, topic, int64(len(acked)))
		if len(recs) != len(acked) {
			t.Fatalf("%s: read %d records, %d acknowledged", label, len(recs), len(acked))
		}
		for i, r := range recs {
			if r.Offset != int64(i) || string(r.Value) != acked[i] {
				t.Fatalf("%s: record %d is %q at offset %d, want %q", label, i, r.Value, r.Offset, acked[i])
			}
		}
	}
	check("after the move")
	t.Logf("moved %d records from %s to %s while producing", len(acked), from, to)
	tb.restart()
	if cur, _ := where(); filepath.Clean(cur) != to {
		t.Fatalf("after restart the replica is in %s", cur)
	}
	check("after restart")
}

// TestAlterReplicaLogDirsReplicated moves every replica of a partition
// with three replicas (the leader's and both followers') to its broker's
// second log directory at once, while an acks=all producer keeps writing:
// followers keep fetching and appending, the leader keeps serving them and
// the producer, and every acknowledged record is read back in order.
func TestAlterReplicaLogDirsReplicated(t *testing.T) {
	c := newRolesCluster(t, testcluster.Combine(3), nil, node.Options{})
	second := make([]string, len(c.props))
	for i := range c.props {
		second[i] = c.props[i]["log.dirs"] + "-second"
		c.props[i]["log.dirs"] += "," + second[i]
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	defer c.dumpGoroutinesIfFailed()
	ctx := testContext(t, 90*time.Second)
	const topic = "moving3"
	adm := kadm.NewClient(c.client())
	seg, minISR := "16384", "2"
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"segment.bytes": &seg, "min.insync.replicas": &minISR}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	pr := &ackedProducer{t: t, cl: c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))}
	pr.produce(ctx, 2000, "before")
	stop := pr.background(ctx, 20)
	for i := range c.props {
		var req kadm.AlterReplicaLogDirsReq
		req.Add(second[i], kadm.TopicsSet{topic: {0: {}}})
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, int32(i+1), req)
		if err != nil {
			t.Fatalf("alter replica log dirs on %d: %v", i+1, err)
		}
		resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil {
				t.Errorf("move on broker %d: %v", i+1, r.Err)
			}
		})
	}
	for i := range c.props {
		awaitReplicaDir(ctx, t, adm, int32(i+1), topic, second[i])
	}
	stop()
	pr.produce(ctx, 100, "after")
	acked := pr.acked
	if t.Failed() {
		return
	}
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", len(got), len(acked), ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	for i, r := range got {
		if i >= len(acked) || r.Offset != int64(i) || string(r.Value) != acked[i] {
			t.Fatalf("record %d is %q at offset %d, want %q", i, r.Value, r.Offset, acked[min(i, len(acked)-1)])
		}
	}
	t.Logf("moved three replicas of %d records while producing", len(acked))
}

// TestAlterReplicaLogDirsResumedAfterRestart: a future log a broker left
// in the destination that is not one Skein can keep (no partition.metadata,
// a segment of garbage) is dropped at the next start and the replica moved
// again from the start; nothing is lost. A future that can be kept is
// resumed from its end: TestAlterReplicaLogDirsResumedAfterStop.
func TestAlterReplicaLogDirsResumedAfterRestart(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	tb := startBroker(t, withProp("log.dirs", d1+","+d2))
	ctx := testContext(t, 60*time.Second)
	const topic = "resumed"
	tb.createTopic(topic, 1, nil)
	adm := kadm.NewClient(tb.client())
	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const n = 500
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%04d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	from := d1
	if _, err := os.Stat(filepath.Join(d2, topic+"-0")); err == nil {
		from = d2
	}
	to := d1
	if from == d1 {
		to = d2
	}
	tb.stop()
	// What a stop mid-copy leaves: a future log with part of the data.
	fut := filepath.Join(to, topic+"-0.0123abcd-future")
	if err := os.MkdirAll(fut, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fut, "00000000000000000000.log"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb.start()
	awaitReplicaDir(ctx, t, adm, 1, topic, to)
	if _, err := os.Stat(fut); !os.IsNotExist(err) {
		t.Fatalf("the interrupted future log is still there: %v", err)
	}
	recs := consumeAll(ctx, t, tb, topic, n)
	for i, r := range recs {
		if string(r.Value) != fmt.Sprintf("v%04d", i) {
			t.Fatalf("record %d: %q", i, r.Value)
		}
	}
}

// ackedProducer writes numbered values to partition 0 one at a time and
// keeps, in offset order, those acknowledged.
type ackedProducer struct {
	t     *testing.T
	cl    *kgo.Client
	mu    sync.Mutex
	acked []string
}

func (p *ackedProducer) produce(ctx context.Context, n int, tag string) {
	for i := range n {
		v := fmt.Sprintf("%s-%05d", tag, i)
		if err := p.cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			p.t.Errorf("produce %s: %v", v, err)
			return
		}
		p.mu.Lock()
		p.acked = append(p.acked, v)
		p.mu.Unlock()
	}
}

// background produces rounds of n until the returned stop is called
// (which waits for the round under way).
func (p *ackedProducer) background(ctx context.Context, n int) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			p.produce(ctx, n, fmt.Sprintf("during%04d", i))
		}
	}()
	return func() { close(quit); <-done }
}

// awaitReplicaDir waits until broker's DescribeLogDirs lists the
// partition topic-0 in dir, and nowhere else (no future replica either).
func awaitReplicaDir(ctx context.Context, t *testing.T, adm *kadm.Client, broker int32, topic, dir string) {
	t.Helper()
	awaitAdmin(ctx, t, fmt.Sprintf("broker %d's replica of %s-0 in %s alone", broker, topic, dir), func() (bool, any) {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, broker, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return false, err
		}
		var in []string
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) { in = append(in, fmt.Sprintf("%s future=%v", p.Dir, p.IsFuture)) })
		return len(in) == 1 && in[0] == dir+" future=false", in
	})
}

// TestAlterReplicaLogDirsBeforeReassignment: asked for a replica it does
// not host yet, a broker answers REPLICA_NOT_AVAILABLE and remembers the
// directory (Kafka's preferred log dir), so the replica a reassignment
// then adds there is created in it, not in the least loaded directory.
func TestAlterReplicaLogDirsBeforeReassignment(t *testing.T) {
	c := newRolesCluster(t, testcluster.Combine(3), nil, node.Options{})
	second := make([]string, len(c.props))
	for i := range c.props {
		second[i] = c.props[i]["log.dirs"] + "-second"
		c.props[i]["log.dirs"] += "," + second[i]
	}
	for i := range c.props {
		c.start(i)
	}
	c.waitRegistered()
	defer c.dumpGoroutinesIfFailed()
	ctx := testContext(t, 60*time.Second)
	const topic = "grown"
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var md kadm.Metadata
	awaitAdmin(ctx, t, "topic created", func() (bool, any) {
		var err error
		md, err = adm.Metadata(ctx, topic)
		return err == nil && len(md.Topics[topic].Partitions[0].Replicas) == 1, err
	})
	// A broker that has no replica of it yet.
	has := md.Topics[topic].Partitions[0].Replicas[0]
	target := int32(1)
	if has == 1 {
		target = 2
	}
	var req kadm.AlterReplicaLogDirsReq
	req.Add(second[target-1], kadm.TopicsSet{topic: {0: {}}})
	// The Metadata above may come from another broker than target: until
	// target's own image has the topic it answers UNKNOWN_TOPIC_OR_PARTITION
	// (as Kafka's does for a topic its metadata cache lacks), so ask again.
	awaitAdmin(ctx, t, "the target broker answered for a replica it does not host", func() (bool, any) {
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, target, req)
		if err != nil {
			t.Fatal(err)
		}
		var last error
		resps.Each(func(r kadm.AlterReplicaLogDirsResponse) { last = r.Err })
		if errors.Is(last, kerr.UnknownTopicOrPartition) {
			return false, last
		}
		if !errors.Is(last, kerr.ReplicaNotAvailable) {
			t.Fatalf("replica not hosted yet: %v, want REPLICA_NOT_AVAILABLE", last)
		}
		return true, last
	})
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{has, target})
	if _, err := adm.AlterPartitionAssignments(ctx, move); err != nil {
		t.Fatal(err)
	}
	awaitReplicaDir(ctx, t, adm, target, topic, second[target-1])
}

// TestAlterReplicaLogDirsStrayFutureRemoved: a restart keeps the future log
// of an interrupted move (storage.RecoverMoves) for its replica to resume
// into once it opens; a replica that left the broker while it was down
// never opens, and the future log is removed with the replica's stray
// directory instead of staying for good (found by the simulator,
// TestLogDirSeeds seed 240). Here the topic is deleted, and the broker's
// directories then put back as a broker down for the deletion would have
// kept them, with a move under way.
func TestAlterReplicaLogDirsStrayFutureRemoved(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	tb := startBroker(t, withProp("log.dirs", d1+","+d2))
	ctx := testContext(t, 60*time.Second)
	const topic = "strayfuture"
	tb.createTopic(topic, 1, nil)
	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(fmt.Sprintf("v%04d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	from, to := d1, d2
	if _, err := os.Stat(filepath.Join(d2, topic+"-0")); err == nil {
		from, to = d2, d1
	}
	tb.stop()
	saved := filepath.Join(base, "saved")
	copyFlatDir(t, filepath.Join(from, topic+"-0"), saved)
	tb.start()
	if _, err := kadm.NewClient(tb.client()).DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	awaitAdmin(ctx, t, "the deleted topic's directory removed", func() (bool, any) {
		_, err := os.Stat(filepath.Join(from, topic+"-0"))
		return os.IsNotExist(err), err
	})
	tb.stop()
	copyFlatDir(t, saved, filepath.Join(from, topic+"-0"))
	fut := filepath.Join(to, topic+"-0.0123abcd-future")
	copyFlatDir(t, saved, fut)
	tb.start()
	awaitAdmin(ctx, t, "the stray replica and its future log removed", func() (bool, any) {
		_, errLive := os.Stat(filepath.Join(from, topic+"-0"))
		_, errFut := os.Stat(fut)
		return os.IsNotExist(errLive) && os.IsNotExist(errFut), []error{errLive, errFut}
	})
}

// copyFlatDir copies the files of directory from (no subdirectories) into
// a new directory to.
func copyFlatDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
