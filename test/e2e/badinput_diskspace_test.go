package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/vfs"
)

// TestDiskBelowFreeSpaceFloor: below log.dir.min.free.bytes a broker
// refuses produces with KAFKA_STORAGE_ERROR (retriable), writes nothing,
// says so in its metrics, and keeps serving reads, metadata and group
// offsets; once space returns a producer that kept retrying gets through
// by itself.
func TestDiskBelowFreeSpaceFloor(t *testing.T) {
	mem := vfs.NewMem()
	const floor = 1 << 20
	tb := startBroker(t, withFS(mem), withProp("log.dir.min.free.bytes", "1048576"))
	const topic = "floor"
	tb.createTopic(topic, 1, nil)
	c := dialRaw(t, tb.addr)
	var corr int32
	acked := produceBatches(t, c, &corr, topic, 5, 4, 0)
	commitOffset(t, tb, "floor-group", topic, 1) // creates __consumer_offsets while there is room
	if v := logDirGauge(t, tb, "skein_log_dir_below_min_free"); v != 0 {
		t.Fatalf("skein_log_dir_below_min_free %v with room, want 0", v)
	}

	mem.SetCapacity(mem.Usage() + floor/2)
	// The gauge reads the space afresh, and the produce's check uses
	// that reading (without it the check reads again within a second).
	if v := logDirGauge(t, tb, "skein_log_dir_below_min_free"); v != 1 {
		t.Fatalf("skein_log_dir_below_min_free %v below the floor, want 1", v)
	}
	corr++
	res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(4, 50)), corr)
	if res.ErrorCode != kerr.KafkaStorageError.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, "log.dir.min.free.bytes") {
		t.Fatalf("produce below the floor: error %d (%v), want KAFKA_STORAGE_ERROR naming the floor", res.ErrorCode, res.ErrorMessage)
	}
	requireLogEnd(t, tb, topic, acked)
	requireUp(t, tb)
	consumeCount(t, tb, topic, int(acked))
	commitOffset(t, tb, "floor-group", topic, acked)

	// A real client keeps retrying the retriable error; freeing space
	// (here: a bigger disk) lets its record through.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	answered := &produceAnswered{ch: make(chan struct{})}
	cl := tb.client(kgo.WithHooks(answered))
	done := make(chan error, 1)
	go func() {
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).FirstErr()
	}()
	select { // the client's first attempt meets the floor
	case <-answered.ch:
	case <-ctx.Done():
		t.Fatal("the producer never got an answer")
	}
	requireLogEnd(t, tb, topic, acked)
	mem.SetCapacity(-1)
	if err := <-done; err != nil {
		t.Fatalf("produce after space returned: %v", err)
	}
	consumeCount(t, tb, topic, int(acked)+1)
	if v := logDirGauge(t, tb, "skein_log_dir_below_min_free"); v != 0 {
		t.Fatalf("skein_log_dir_below_min_free %v after space returned, want 0", v)
	}
}

// TestDiskFullRealFilesystem runs a broker on a 64 MiB tmpfs (mounting
// needs root; skipped without it) with a floor of 8 MiB and produces until
// refused: the broker stays up, answers KAFKA_STORAGE_ERROR, serves every
// acknowledged record exactly once, and produces again once a file is
// removed from the filesystem.
func TestDiskFullRealFilesystem(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 64 MiB tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, withProp("log.dirs", filepath.Join(mnt, "broker-1")), withProp("log.dir.min.free.bytes", "8388608"))
	const topic = "tmpfs"
	tb.createTopic(topic, 1, nil)
	c := dialRaw(t, tb.addr)
	var corr int32
	var acked int64
	const perBatch = 100
	for {
		corr++
		res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(perBatch, 1000)), corr)
		if res.ErrorCode == kerr.KafkaStorageError.Code {
			break
		}
		if res.ErrorCode != 0 || res.BaseOffset != acked {
			t.Fatalf("produce %d: error %d, base offset %d, want 0, %d", corr, res.ErrorCode, res.BaseOffset, acked)
		}
		if acked += perBatch; acked > 100_000 {
			t.Fatalf("still accepting produces after %d records on a 64 MiB filesystem", acked)
		}
	}
	t.Logf("refused after %d records", acked)
	for range 3 { // still refused, still up
		corr++
		if res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(1, 10)), corr); res.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("produce on the full filesystem: error %d, want KAFKA_STORAGE_ERROR", res.ErrorCode)
		}
	}
	requireUp(t, tb)
	consumeCount(t, tb, topic, int(acked))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	corr++
	if res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(3, 10)), corr); res.ErrorCode != 0 || res.BaseOffset != acked {
		t.Fatalf("produce after space was freed: error %d, base offset %d; want 0, %d", res.ErrorCode, res.BaseOffset, acked)
	}
	consumeCount(t, tb, topic, int(acked)+3)
}

// logDirGauge reads a per-log-directory gauge of the broker's only
// directory from its metrics registry.
func logDirGauge(t testing.TB, tb *testBroker, name string) float64 {
	t.Helper()
	return brokerLogDirGauge(t, tb.b, name)
}

// brokerLogDirGauge is logDirGauge of any broker. Reading the gauges
// reads the directory's free space afresh, and the broker's write checks
// take that reading (node/diskspace.go): a test that changed the space
// reads the gauge to have the broker see the change now, rather than
// within its refresh interval.
func brokerLogDirGauge(t testing.TB, b *node.Broker, name string) float64 {
	t.Helper()
	families, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single %s series", name)
	return 0
}

// produceAnswered is a franz-go hook that closes ch once a Produce answer
// has been read.
type produceAnswered struct {
	once sync.Once
	ch   chan struct{}
}

func (h *produceAnswered) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, _ kgo.BrokerE2E) {
	if key == 0 {
		h.once.Do(func() { close(h.ch) })
	}
}

// requireLogEnd fails the test unless partition 0 of topic ends at want.
func requireLogEnd(t testing.TB, tb *testBroker, topic string, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(tb.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Err != nil || o.Offset != want {
		t.Fatalf("%s-0 ends at %d (%v), want %d", topic, o.Offset, o.Err, want)
	}
}

// TestDiskAlertRulesNameLiveMetrics: every skein_ metric the disk alert
// rules in deploy/prometheus name is exported by a running broker.
func TestDiskAlertRulesNameLiveMetrics(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "skein-disk-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\bskein_[a-z_]+`).FindAllString(string(rules), -1)
	if len(named) == 0 {
		t.Fatal("the rules name no skein_ metric")
	}
	tb := startBroker(t)
	families, err := tb.b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range families {
		live[f.GetName()] = true
	}
	for _, m := range named {
		if !live[m] {
			t.Errorf("the alert rules name %s, which the broker does not export", m)
		}
	}
}

// TestDiskBelowFloorWritesNoZeroWindow: the zero-filled window a log
// writes past its end after a small fsync (storage's zerotail.go, up to
// 256 KiB a partition) takes disk space like any write, so below the
// floor it is not written: the writes the floor lets through (group
// offsets here) would otherwise spend the headroom it keeps for them on
// zeros, 256 KiB per partition at a time.
func TestDiskBelowFloorWritesNoZeroWindow(t *testing.T) {
	mem := vfs.NewMem()
	const floor = 1 << 20
	tb := startBroker(t, withFS(mem), withProp("log.dir.min.free.bytes", "1048576"))
	const topic = "floor-window"
	tb.createTopic(topic, 1, nil)

	// Below the floor, with room on the disk for a whole window.
	mem.SetCapacity(mem.Usage() + floor/2)
	if v := logDirGauge(t, tb, "skein_log_dir_below_min_free"); v != 1 {
		t.Fatalf("skein_log_dir_below_min_free %v below the floor, want 1", v)
	}
	before := mem.Usage()
	// The first commit creates __consumer_offsets (below the floor) and
	// writes, and fsyncs, one small batch to it.
	commitOffset(t, tb, "floor-window-group", topic, 0)
	commitOffset(t, tb, "floor-window-group", topic, 0)
	if grew := mem.Usage() - before; grew >= 256<<10 {
		t.Fatalf("below the floor the disk use grew by %d bytes for two offset commits: a zero-filled window was written", grew)
	}
	requireUp(t, tb)
}
