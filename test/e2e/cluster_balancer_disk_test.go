package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/testcluster"
)

// TestBalancerMovesBytesOffFullBroker: broker 1 holds every partition of
// a topic with 1 MiB in each, brokers 2 and 3 hold nothing; replica
// counts are left out of it (replica.imbalance.per.broker.percentage is
// high), so only the disks' imbalance moves anything. The controllers'
// balancer gathers DescribeLogDirs from the brokers and moves replicas off
// broker 1, at most two at once, until no broker holds more than its
// share by the threshold (10% of the mean, or 512 KiB), while an
// idempotent acks=all producer keeps writing; every acknowledged record is
// read back.
func TestBalancerMovesBytesOffFullBroker(t *testing.T) {
	const minBytes = 512 << 10
	c := newRolesCluster(t, []string{testcluster.Combined, testcluster.Combined, testcluster.Combined}, map[string]string{
		"auto.replica.balance.enable":               "true",
		"replica.balance.check.interval.ms":         "1000",
		"replica.balance.max.concurrent.moves":      "2",
		"replica.imbalance.per.broker.percentage":   "1000",
		"replica.balance.disk.imbalance.percentage": "10",
		"replica.balance.disk.imbalance.min.bytes":  strconv.Itoa(minBytes),
		// The brokers share this machine's filesystem, whose usage is
		// not theirs to judge.
		"replica.balance.max.disk.usage.percent": "100",
	}, node.Options{})
	for i := range 3 {
		c.start(i)
	}
	c.waitRegistered()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic, partitions = "heavy", 8
	assignment := make([][]int32, partitions)
	for i := range assignment {
		assignment[i] = []int32{1}
	}
	createAssignedTopic(ctx, t, c.client(), topic, assignment)

	// 1 MiB per partition, in 16 KiB records numbered as the checks
	// read them (the number in the value, the bulk in the key).
	producer := idempotentProducer(t, c.addrs(), kgo.ProducerBatchMaxBytes(1<<20))
	acks := newAckedRecords()
	pad := make([]byte, 16<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(pad) // incompressible: the producer compresses batches
	n := 0
	for range 64 {
		var rs []*kgo.Record
		for p := range int32(partitions) {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: pad, Value: []byte(strconv.Itoa(n))})
			n++
		}
		// Results come in completion order: the value says which is which.
		for _, res := range producer.ProduceSync(ctx, rs...) {
			num, err := strconv.Atoi(string(res.Record.Value))
			if err != nil {
				t.Fatal(err)
			}
			acks.record(num)(res.Record, res.Err)
		}
	}
	if _, got, errs := acks.snapshot(); got != n {
		t.Fatalf("%d of %d padded records acknowledged: %v", got, n, errs)
	}
	st := startStream(ctx, producer, topic, spreadOver(partitions), n, openEnded, acks)

	var last string
	awaitAdmin(ctx, t, "the brokers' disks within the threshold, nothing moving", func() (bool, any) {
		list, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		if len(list) > 2 {
			t.Errorf("%d reassignments at once, max.concurrent.moves is 2", len(list))
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return false, err
		}
		held := map[int32]int64{}
		var total int64
		for id, ds := range dirs {
			held[id] = ds.Size()
			total += ds.Size()
		}
		mean := float64(total) / 3
		within := len(list) == 0 && len(held) == 3
		for _, b := range held {
			if float64(b) > mean*1.1 && float64(b)-mean >= minBytes {
				within = false
			}
		}
		last = strconv.Quote(formatHeld(held))
		return within, last
	})
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	onto := map[int32]int{}
	for _, p := range md.Topics[topic].Partitions {
		onto[p.Replicas[0]]++
	}
	if onto[1] > 3 || onto[2] == 0 || onto[3] == 0 {
		t.Fatalf("partitions per broker %v (bytes %s): want broker 1's spread to 2 and 3", onto, last)
	}
	awaitProgress(ctx, t, acks, 100) // writes go on after the moves
	total := n + st.stopAndWait(t)
	if _, got, errs := acks.snapshot(); got != total {
		t.Fatalf("%d of %d acknowledged; errors %v", got, total, errs)
	}
	if got := checkAckedRecords(ctx, t, c.addrs(), topic, acks); got != total {
		t.Fatalf("read %d records, want %d", got, total)
	}
}

func formatHeld(held map[int32]int64) string {
	s := ""
	for id := int32(1); id <= 3; id++ {
		s += "broker " + strconv.Itoa(int(id)) + ": " + strconv.FormatInt(held[id], 10) + " B; "
	}
	return s
}

// TestBalancerOnControllerOnlyNodeReadsDisks: with the quorum on a
// dedicated controller (node 1) and inter.broker.listener.name set there,
// the controller dials the brokers' PLAINTEXT listener for their
// DescribeLogDirs, so its balancer weighs disks: broker 2 holds every
// partition of a topic, 512 KiB each, and replica counts are left out of
// it (replica.imbalance.per.broker.percentage is high); the moves that
// follow can only be disk-driven.
func TestBalancerOnControllerOnlyNodeReadsDisks(t *testing.T) {
	const minBytes = 256 << 10
	c := startRolesCluster(t, []string{controllerOnly, brokerOnly, brokerOnly, brokerOnly}, map[string]string{
		"inter.broker.listener.name": "PLAINTEXT",

		"auto.replica.balance.enable":               "true",
		"replica.balance.check.interval.ms":         "1000",
		"replica.imbalance.per.broker.percentage":   "1000",
		"replica.balance.disk.imbalance.percentage": "10",
		"replica.balance.disk.imbalance.min.bytes":  strconv.Itoa(minBytes),
		"replica.balance.max.disk.usage.percent":    "100",
	}, node.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic, partitions = "dedicated", 6
	assignment := make([][]int32, partitions)
	for i := range assignment {
		assignment[i] = []int32{2}
	}
	createAssignedTopic(ctx, t, c.client(), topic, assignment)
	// Uncompressed: the records repeat one value, which compression
	// would fold away.
	producer := idempotentProducer(t, c.addrs(), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	pad := make([]byte, 16<<10)
	_, _ = rand.NewChaCha8([32]byte{4}).Read(pad)
	for p := range int32(partitions) {
		var rs []*kgo.Record
		for range 32 {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: pad})
		}
		if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	awaitAdmin(ctx, t, "replicas moved off broker 2 by disk, nothing moving", func() (bool, any) {
		list, err := adm.ListPartitionReassignments(ctx, nil)
		if err != nil {
			return false, err
		}
		onto, err := replicasByBroker(ctx, adm, topic)
		if err != nil {
			return false, err
		}
		dirs, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			return false, err
		}
		sizes := map[int32]int64{}
		for id, ds := range dirs {
			sizes[id] = ds.Size()
		}
		// Each broker near a third of the bytes: more than a count
		// rule (which moves only onto a broker holding none) explains.
		return len(list) == 0 && onto[2] <= 3 && onto[3] > 0 && onto[4] > 0, fmt.Sprint("replicas ", onto, ", bytes ", sizes)
	})
}
