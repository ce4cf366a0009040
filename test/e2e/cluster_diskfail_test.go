package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/vfs"
)

// startMemCluster starts three combined nodes whose log directories all
// live on one in-memory filesystem, so a test can fail the disk of one of
// them by path.
func startMemCluster(t *testing.T) (*testCluster, *vfs.Mem) {
	t.Helper()
	mem := vfs.NewMem()
	roles := []string{combinedRoles, combinedRoles, combinedRoles}
	return startRolesCluster(t, roles, nil, node.Options{FS: mem}), mem
}

// failUnder makes writes and fsyncs of files under dir (and whose path
// holds part) fail with errno.
func failUnder(mem *vfs.Mem, dir, part string, errno syscall.Errno) {
	prefix := dir + string(filepath.Separator)
	mem.SetFault(func(op vfs.Op, path string) error {
		if (op == vfs.OpWrite || op == vfs.OpSync) && strings.HasPrefix(path, prefix) && strings.Contains(path, part) {
			return errno
		}
		return nil
	})
}

// TestClusterDiskFailureHandsOver: the disk of one replica of a partition
// fails (EIO on writes and fsyncs) while an idempotent acks=all producer
// runs. That broker's log directory goes offline and the broker hands over
// and stops: when it led, a follower from the ISR leads. Either way the
// producer carries on, every acknowledged record is read back exactly
// once, in order, and the failed broker is out of the ISR. Restarted on
// the still failing disk it stops again; restarted with a healthy disk, it
// catches up and rejoins. (A disk that is only full keeps its broker up:
// TestDiskFullKeepsServing.)
func TestClusterDiskFailureHandsOver(t *testing.T) {
	for _, role := range []string{"leader", "follower"} {
		t.Run(role, func(t *testing.T) { testDiskFailureHandsOver(t, role == "leader") })
	}
}

func testDiskFailureHandsOver(t *testing.T, victimLeads bool) {
	c, mem := startMemCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "diskfail"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := c.leaderOf(ctx, topic, 0)
	failed := leader
	if !victimLeads {
		failed = otherBrokers(3, leader)[0]
	}
	victim := c.brokers[failed-1]
	t.Logf("leader of %s-0 is broker %d; failing the disk of broker %d", topic, leader, failed)

	producer := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000), kgo.RequestRetries(1000))
	var (
		mu    sync.Mutex
		acked []int
	)
	const total = 2000
	var wg sync.WaitGroup
	for i := range total {
		if i == total/3 {
			if err := producer.Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			failUnder(mem, c.props[failed-1]["log.dirs"], topic+"-0", syscall.EIO)
			t.Logf("failed the disk of broker %d after %d sends", failed, i)
		}
		wg.Add(1)
		v := i
		producer.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(v))}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked = append(acked, v)
				mu.Unlock()
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("final flush: %v", err)
	}
	wg.Wait()
	waitFatal(t, victim, node.ErrLogDirOffline)
	c.brokers[failed-1] = nil
	if len(acked) != total {
		t.Fatalf("%d of %d records acknowledged; the producer should carry on", len(acked), total)
	}

	after := awaitPartition(ctx, t, adm, topic, 0, fmt.Sprintf("a leader and broker %d out of the ISR", failed), func(v partitionView) bool {
		return v.Leader >= 0 && v.Leader != failed && !v.inISR(failed)
	})
	t.Logf("after the disk failed: %v", after)
	readExactlyOnce(ctx, t, c, topic, acked)

	// A restart on the same failing disk finds it when it opens the
	// replica, and stops again rather than run without it.
	c.start(int(failed) - 1)
	waitFatal(t, c.brokers[failed-1], node.ErrLogDirOffline)
	c.brokers[failed-1] = nil

	// A restart with a healthy disk brings the directory back; the
	// replica catches up and rejoins the ISR.
	mem.SetFault(nil)
	c.start(int(failed) - 1)
	rejoined := awaitPartition(ctx, t, adm, topic, 0, fmt.Sprintf("broker %d back in the ISR", failed), func(v partitionView) bool {
		return v.inISR(failed) && len(v.ISR) == 3
	})
	t.Logf("after the restart: %v", rejoined)
}

// readExactlyOnce reads topic from the start and fails unless every value
// of acked is there exactly once, no value twice, in increasing order.
func readExactlyOnce(ctx context.Context, t *testing.T, c *testCluster, topic string, acked []int) {
	t.Helper()
	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[int]int{}
	prev := -1
	for len(seen) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", len(seen), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v int
			fmt.Sscan(string(r.Value), &v)
			seen[v]++
			if seen[v] > 1 {
				t.Fatalf("record %d read %d times", v, seen[v])
			}
			if v <= prev {
				t.Fatalf("record %d read after %d: out of order", v, prev)
			}
			prev = v
		})
	}
	for _, v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %d read %d times", v, seen[v])
		}
	}
}

// TestClusterMetadataLogFailureHaltsNode: a node whose metadata log cannot
// be written halts with a fatal error instead of running on without
// metadata; the other two keep the quorum and the cluster goes on.
func TestClusterMetadataLogFailureHaltsNode(t *testing.T) {
	c, mem := startMemCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	createReplicatedTopic(ctx, t, adm, "before", 1, 3, nil)

	const victim = 2
	failUnder(mem, c.props[victim-1]["log.dirs"], "__cluster_metadata-0", syscall.EIO)
	// Any metadata change is written by every voter. The create only
	// triggers the fault: when its request went through the failing node
	// the answer is lost with it, so its outcome is not checked.
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "during"); err != nil {
		t.Logf("create topic during the fault: %v", err)
	}
	waitFatal(t, c.brokers[victim-1], node.ErrMetadataLogFailed)
	c.brokers[victim-1] = nil
	// Its sessions closed with it: the controller fences it, and new
	// topics are placed on the other two.
	for {
		brokers, err := adm.ListBrokers(ctx)
		if err == nil && !slices.Contains(brokers.NodeIDs(), victim) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker %d still listed after it halted: %v", victim, err)
		case <-time.After(externalPollInterval):
		}
	}

	// The rest go on: new topics, writes and reads.
	createReplicatedTopic(ctx, t, adm, "after", 1, 2, nil)
	producer := c.client(kgo.DefaultProduceTopic("after"), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := make([]int, 100)
	for i := range acked {
		acked[i] = i
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d after the node halted: %v", i, err)
		}
	}
	readExactlyOnce(ctx, t, c, "after", acked)
}

// TestDiskClusterFollowerBelowFloor: a follower whose log directory drops
// below its free-space floor stops appending instead of filling the disk
// (its metadata log shares it): it leaves the ISR, the leader and the rest
// keep accepting acks=all writes, the follower stays up, and once space
// returns it catches up and rejoins. Every acknowledged record reads back
// exactly once.
func TestDiskClusterFollowerBelowFloor(t *testing.T) {
	c, mem := startMemCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := observerClient(t, c.addrs())
	const topic = "follower-floor"
	createReplicatedTopic(ctx, t, adm, topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := c.leaderOf(ctx, topic, 0)
	low := otherBrokers(3, leader)[0]
	producer := c.client(kgo.DefaultProduceTopic(topic))
	var acked []int
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			acked = append(acked, i)
		}
	}
	produce(0, 50)

	dir := c.props[low-1]["log.dirs"]
	mem.SetSpace(dir, vfs.Space{Total: 1 << 30, Free: 1 << 20}) // below the 64 MiB default floor
	// Read now (brokerLogDirGauge), not within the refresh interval: the
	// 50 records below take less than that.
	if v := brokerLogDirGauge(t, c.brokers[low-1], "skein_log_dir_below_min_free"); v != 1 {
		t.Fatalf("broker %d: skein_log_dir_below_min_free %v below the floor, want 1", low, v)
	}
	t.Logf("broker %d (a follower of leader %d) is below its free-space floor", low, leader)
	produce(50, 100) // acks=all completes once the stalled follower leaves the ISR
	v := awaitPartition(ctx, t, adm, topic, 0, fmt.Sprintf("broker %d out of the ISR", low), func(v partitionView) bool {
		return !v.inISR(low) && v.Leader == leader
	})
	t.Logf("below the floor: %v", v)
	select {
	case err := <-c.brokers[low-1].Fatal():
		t.Fatalf("broker %d stopped: %v", low, err)
	default:
	}

	mem.ClearSpace(dir)
	produce(100, 150)
	v = awaitPartition(ctx, t, adm, topic, 0, fmt.Sprintf("broker %d back in the ISR", low), func(v partitionView) bool {
		return v.inISR(low) && len(v.ISR) == 3
	})
	t.Logf("space returned: %v", v)
	readExactlyOnce(ctx, t, c, topic, acked)
}
