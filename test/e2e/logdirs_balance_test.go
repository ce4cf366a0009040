package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBalancerEvensLogDirs (issue 15): a broker with two log.dirs holds
// four partitions of 512 KiB each, all in its first directory
// (AlterReplicaLogDirs put them there before they were filled). The
// controller's balancer (replica.balance.log.dirs.enable, on by default
// with auto.replica.balance.enable) reads DescribeLogDirs and moves one
// replica at a time between the directories with AlterReplicaLogDirs until
// they hold two each, as kadm sees it, and every record is still read
// back.
func TestBalancerEvensLogDirs(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	tb := startBroker(t, withProp("log.dirs", d1+","+d2),
		withProp("auto.replica.balance.enable", "true"),
		withProp("replica.balance.check.interval.ms", "1000"),
		withProp("replica.balance.disk.imbalance.min.bytes", "262144"),
		// The directories share this machine's filesystem, whose usage
		// is not theirs to judge.
		withProp("replica.balance.max.disk.usage.percent", "100"))
	ctx := testContext(t, 90*time.Second)
	const topic, partitions = "uneven", 4
	tb.createTopic(topic, partitions, nil)
	adm := kadm.NewClient(tb.client())

	all := kadm.TopicsSet{}
	for p := range int32(partitions) {
		all.Add(topic, p)
	}
	var req kadm.AlterReplicaLogDirsReq
	req.Add(d1, all)
	resps, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatalf("alter replica log dirs: %v", err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			t.Fatalf("move %s-%d to %s: %v", r.Topic, r.Partition, d1, r.Err)
		}
	})
	placement := func() (map[string][]int32, int, error) {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, all)
		if err != nil {
			return nil, 0, err
		}
		in, futures := map[string][]int32{}, 0
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.IsFuture {
				futures++
				return
			}
			in[filepath.Clean(p.Dir)] = append(in[filepath.Clean(p.Dir)], p.Partition)
		})
		for _, ps := range in {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		}
		return in, futures, nil
	}
	awaitAdmin(ctx, t, "every partition in "+d1, func() (bool, any) {
		in, futures, err := placement()
		if err != nil {
			return false, err
		}
		return futures == 0 && len(in[d1]) == partitions, in
	})

	cl := tb.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 16<<10)
	_, _ = rand.NewChaCha8([32]byte{2}).Read(value)
	const perPartition = 32 // 512 KiB
	var records []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPartition {
			records = append(records, &kgo.Record{Partition: p, Key: []byte(fmt.Sprint(i)), Value: value})
		}
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	awaitAdmin(ctx, t, "two partitions in each directory, nothing moving", func() (bool, any) {
		in, futures, err := placement()
		if err != nil {
			return false, err
		}
		return futures == 0 && len(in[d1]) == 2 && len(in[d2]) == 2, in
	})
	for p := range int32(partitions) {
		if n := countPartition(ctx, t, tb, topic, p, perPartition); n != perPartition {
			t.Fatalf("partition %d: read %d records after the moves, want %d", p, n, perPartition)
		}
	}
}

// countPartition reads partition p of topic from the start until it has
// want records (or the context ends) and returns how many it read.
func countPartition(ctx context.Context, t *testing.T, tb *testBroker, topic string, p int32, want int) int {
	t.Helper()
	cl := tb.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch %s-%d: %v", topic, p, err) })
		n += fs.NumRecords()
	}
	return n
}
