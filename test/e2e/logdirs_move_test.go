package e2e

import (
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

	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var mu sync.Mutex
	var acked []string // values in offset order
	produce := func(n int, tag string) {
		for i := range n {
			v := fmt.Sprintf("%s-%05d", tag, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	}
	produce(3000, "before")

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			produce(50, fmt.Sprintf("during%03d", i))
		}
	}()

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

	awaitAdmin(ctx, t, "replica in "+to+" alone", func() (bool, any) {
		cur, dirs := where()
		n := 0
		dirs.EachPartition(func(kadm.DescribedLogDirPartition) { n++ })
		return filepath.Clean(cur) == to && n == 1, dirs.SortedPartitions()
	})
	close(stop)
	<-done
	produce(200, "after")
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
