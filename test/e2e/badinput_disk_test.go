package e2e

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/vfs"
)

// produceBatches sends count acks=all batches of perBatch records and
// fails the test unless each is acknowledged at the next offset.
func produceBatches(t *testing.T, c *rawConn, corr *int32, topic string, count, perBatch int, nextOffset int64) int64 {
	t.Helper()
	for i := 0; i < count; i++ {
		*corr++
		res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(perBatch, 50)), *corr)
		if res.ErrorCode != 0 || res.BaseOffset != nextOffset {
			t.Fatalf("produce batch %d: error %d, base offset %d; want 0, %d", i, res.ErrorCode, res.BaseOffset, nextOffset)
		}
		nextOffset += int64(perBatch)
	}
	return nextOffset
}

// TestDiskFullKeepsServing: when an append hits ENOSPC (no free-space
// floor to stop it earlier) the producer gets KAFKA_STORAGE_ERROR at once
// and the broker stays up: the write was undone, so the log directory
// stays online, reads and metadata keep serving, and once space
// returns produces continue at the next offset, without a gap or a
// phantom record from the failed append. (A full disk used to take the
// directory offline and stop the broker.)
func TestDiskFullKeepsServing(t *testing.T) {
	mem := vfs.NewMem()
	tb := startBroker(t, withFS(mem), withProp("log.dir.min.free.bytes", "0"))
	const topic = "disk-full"
	tb.createTopic(topic, 1, nil)
	c := dialRaw(t, tb.addr)
	var corr int32
	acked := produceBatches(t, c, &corr, topic, 5, 4, 0)

	mem.SetCapacity(mem.Usage() + 64) // room for no batch
	for range 3 {
		corr++
		// Larger than the zero-filled window the log keeps after its
		// end (storage/zerotail.go): a batch that fits in it would be
		// written to space already taken, and succeed.
		res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(300, 1000)), corr)
		if res.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("produce on a full disk: error %d, want KAFKA_STORAGE_ERROR (56)", res.ErrorCode)
		}
	}
	requireUp(t, tb)
	consumeCount(t, tb, topic, int(acked))
	requireUp(t, tb)

	mem.SetCapacity(-1)
	corr++
	res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(3, 50)), corr)
	if res.ErrorCode != 0 || res.BaseOffset != acked {
		t.Fatalf("produce once space returned: error %d, base offset %d; want 0, %d", res.ErrorCode, res.BaseOffset, acked)
	}
	consumeCount(t, tb, topic, int(acked)+3)
	// And the partition survives a restart intact.
	tb.restart()
	consumeCount(t, tb, topic, int(acked)+3)
}

// requireUp fails the test if the broker stopped by itself.
func requireUp(t testing.TB, tb *testBroker) {
	t.Helper()
	select {
	case err := <-tb.b.Fatal():
		t.Fatalf("broker stopped by itself: %v", err)
	default:
	}
}

// commitOffset commits an offset for a group and reads it back: the group
// coordinator (whose writes go to __consumer_offsets) keeps serving.
func commitOffset(t testing.TB, tb *testBroker, group, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(tb.client())
	var os kadm.Offsets
	os.AddOffset(topic, 0, offset, -1)
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offset for %s: %v", group, err)
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.At != offset {
		t.Fatalf("group %s: committed offset %+v, want %d", group, o, offset)
	}
}

// TestFsyncFailureFencesPartition: a failed fsync means the kernel may have
// dropped the data, so the broker cannot know what is on disk. The
// waiting acks=all produce gets KAFKA_STORAGE_ERROR, the log directory goes
// offline and the broker (with no other directory) stops with a fatal
// error rather than serve from a disk it cannot trust. After a restart the
// partition is recovered from disk, writable again, and everything
// acknowledged before is there.
func TestFsyncFailureFencesPartition(t *testing.T) {
	mem := vfs.NewMem()
	tb := startBroker(t, withFS(mem))
	const topic = "fsync-fails"
	tb.createTopic(topic, 1, nil)
	c := dialRaw(t, tb.addr)
	var corr int32
	acked := produceBatches(t, c, &corr, topic, 2, 4, 0)

	mem.SetFault(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, topic+"-0") && strings.HasSuffix(path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	corr++
	res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(4, 50)), corr)
	if res.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce whose fsync fails: error %d, want KAFKA_STORAGE_ERROR (56)", res.ErrorCode)
	}
	waitFatal(t, tb.b, node.ErrLogDirOffline)
	tb.b = nil

	// The batch whose fsync failed was never acknowledged; recovery may
	// keep it (as Kafka does with unacknowledged data), so only a lower
	// bound is checked.
	mem.SetFault(nil)
	tb.start()
	// Start returns before the recovered partition has learned from the
	// metadata that it leads; a produce sent earlier is refused with
	// NOT_LEADER_OR_FOLLOWER, as Kafka refuses it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, leads := tb.b.LeaderISR(topic, 0); leads {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s-0 not led by the restarted broker", topic)
		case <-time.After(externalPollInterval):
		}
	}
	c = dialRaw(t, tb.addr)
	corr++
	res = produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(1, 50)), corr)
	if res.ErrorCode != 0 || res.BaseOffset < acked {
		t.Fatalf("produce after restart: error %d, base offset %d; want success at >= %d", res.ErrorCode, res.BaseOffset, acked)
	}
	t.Logf("after restart the log continues at offset %d (%d acknowledged before the fault)", res.BaseOffset, acked)
}

// waitFatal waits for b to stop by itself with an error matching want.
func waitFatal(t testing.TB, b *node.Broker, want error) {
	t.Helper()
	select {
	case err := <-b.Fatal():
		if !errors.Is(err, want) {
			t.Fatalf("broker stopped with %v, want %v", err, want)
		}
		t.Logf("broker stopped by itself: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("broker did not stop by itself within 30 s (want %v)", want)
	}
}
