package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkAlterReplicaLogDirs measures how fast a replica moves between
// the two log directories of one broker (AlterReplicaLogDirs through
// kadm): MiB/s of its log, from the request to DescribeLogDirs showing it
// in the other directory alone, unthrottled and with
// replica.alter.log.dirs.io.max.bytes.per.second at 8 MiB/s. Each
// iteration moves the replica back the other way. Both directories share
// a disk, so "unlimited" is what this machine's page cache and copier do.
//
//	go test -run '^$' -bench BenchmarkAlterReplicaLogDirs -benchtime 3x ./test/e2e/
func BenchmarkAlterReplicaLogDirs(b *testing.B) {
	for _, bc := range []struct {
		name string
		rate string
	}{
		{"unlimited", ""},
		{"throttled-8MiB", "8388608"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			mv := startMoveBroker(ctx, b, bc.rate, 32)
			size := mv.size()
			b.ResetTimer()
			for range b.N {
				to := mv.other()
				mv.request(to)
				for !mv.in(to) {
					select {
					case <-ctx.Done():
						b.Fatal("the move did not end")
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(size)*float64(b.N)/(1<<20)/b.Elapsed().Seconds(), "MiB/s")
			b.ReportMetric(float64(size)/(1<<20), "MiB/move")
		})
	}
}

// TestAlterReplicaLogDirsThrottleIsDynamic: at
// replica.alter.log.dirs.io.max.bytes.per.second 1024 a move of 8 MiB
// (hours at that rate) is under way, with a future replica in the
// destination; raising the rate on the broker's resource with kadm
// (IncrementalAlterConfigs) lets the same move finish at once.
func TestAlterReplicaLogDirsThrottleIsDynamic(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	mv := startMoveBroker(ctx, t, "1024", 8)
	to := mv.other()
	mv.request(to)
	if dirs := mv.dirs(); len(dirs) != 2 {
		t.Fatalf("right after the request the replica is in %v, want its current and future directories", dirs)
	}
	mv.setRate(unlimitedRate)
	awaitReplicaDir(ctx, t, mv.adm, 1, mv.topic, to)
}

// TestAlterReplicaLogDirsResumedAfterStop stops a broker in the middle of
// a move (at 512 KiB/s, once the future log holds more than one batch of
// the 16 MiB, then held at 1024 B/s) and starts it again: the move goes on
// from what the future log holds, so right after the restart
// DescribeLogDirs shows the future no further behind than before the stop.
// Copying again from the start it would hold one batch (a copy takes at
// least one, and one batch of up to 1 MiB puts 1024 B/s in debt for
// minutes): further behind. Once the rate is raised the move ends with
// every record.
func TestAlterReplicaLogDirsResumedAfterStop(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	const mib = 16
	mv := startMoveBroker(ctx, t, "524288", mib)
	total := int64(mib * 16)
	to := mv.other()
	mv.request(to)
	// Batches hold at most 16 records of 64 KiB (1 MiB): 20 copied is
	// two batches at least, and far from the last 4 MiB, which would
	// finish unthrottled.
	awaitAdmin(ctx, t, "two batches copied", func() (bool, any) {
		lag, ok := mv.futureLag()
		return ok && lag <= total-20, lag
	})
	mv.setRate("1024")
	before, ok := mv.futureLag()
	if !ok {
		t.Fatal("the move ended before the stop")
	}
	mv.tb.stop()
	mv.tb.start()
	var after int64
	awaitAdmin(ctx, t, "the move resumed", func() (bool, any) {
		var ok bool
		after, ok = mv.futureLag()
		return ok, mv.dirs()
	})
	t.Logf("the future log was %d of %d records behind before the stop, %d right after the restart", before, total, after)
	if after > before {
		t.Fatalf("after the restart the future is %d records behind, %d before the stop: the copy started over", after, before)
	}
	mv.setRate(unlimitedRate)
	awaitReplicaDir(ctx, t, mv.adm, 1, mv.topic, to)
	want := moveRecords(mib)
	recs := consumeAll(ctx, t, mv.tb, mv.topic, total)
	if len(recs) != len(want) {
		t.Fatalf("%d records after the move, %d written", len(recs), len(want))
	}
	for i, r := range recs {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, want[i]) {
			t.Fatalf("record %d (offset %d) is not the one written", i, r.Offset)
		}
	}
}

func firstErr(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	return nil
}

// moveBroker is one broker with two log directories and a topic of one
// partition holding MiB of incompressible records, to move between them.
type moveBroker struct {
	ctx    context.Context
	t      testing.TB
	tb     *testBroker
	adm    *kadm.Client
	topic  string
	d1, d2 string
}

func startMoveBroker(ctx context.Context, t testing.TB, rate string, mib int) *moveBroker {
	t.Helper()
	base := t.TempDir()
	mv := &moveBroker{ctx: ctx, t: t, topic: "moved", d1: filepath.Join(base, "d1"), d2: filepath.Join(base, "d2")}
	opts := []brokerOption{withProp("log.dirs", mv.d1+","+mv.d2)}
	if rate != "" {
		opts = append(opts, withProp("replica.alter.log.dirs.io.max.bytes.per.second", rate))
	}
	tb := startBroker(t, opts...)
	mv.tb = tb
	seg := "8388608"
	tb.createTopic(mv.topic, 1, map[string]*string{"segment.bytes": &seg})
	mv.adm = kadm.NewClient(tb.client())
	cl := tb.client(kgo.DefaultProduceTopic(mv.topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(64))
	for _, v := range moveRecords(mib) {
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return mv
}

// moveRecords are the values startMoveBroker writes: mib MiB of
// incompressible records of 64 KiB.
func moveRecords(mib int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, mib*16)
	for r := range out {
		v := make([]byte, 64<<10)
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		out[r] = v
	}
	return out
}

// futureLag is the future replica's OffsetLag in DescribeLogDirs (false
// when there is none).
func (mv *moveBroker) futureLag() (lag int64, ok bool) {
	mv.t.Helper()
	described, err := mv.adm.DescribeBrokerLogDirs(mv.ctx, 1, kadm.TopicsSet{mv.topic: {0: {}}})
	if err != nil {
		mv.t.Fatalf("describe log dirs: %v", err)
	}
	described.EachPartition(func(p kadm.DescribedLogDirPartition) {
		if p.IsFuture {
			lag, ok = p.OffsetLag, true
		}
	})
	return lag, ok
}

// setRate sets the broker's replica.alter.log.dirs.io.max.bytes.per.second.
func (mv *moveBroker) setRate(rate string) {
	mv.t.Helper()
	res, err := mv.adm.AlterBrokerConfigs(mv.ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &rate}}, 1)
	if err = firstErr(res, err); err != nil {
		mv.t.Fatal(err)
	}
}

// dirs lists where the broker has the partition, as "dir future=bool".
func (mv *moveBroker) dirs() []string {
	dirs, _ := mv.describe()
	return dirs
}

// size is the current replica's size in bytes.
func (mv *moveBroker) size() int64 {
	_, size := mv.describe()
	return size
}

func (mv *moveBroker) describe() (dirs []string, size int64) {
	mv.t.Helper()
	described, err := mv.adm.DescribeBrokerLogDirs(mv.ctx, 1, kadm.TopicsSet{mv.topic: {0: {}}})
	if err != nil {
		mv.t.Fatalf("describe log dirs: %v", err)
	}
	described.EachPartition(func(p kadm.DescribedLogDirPartition) {
		dirs = append(dirs, fmt.Sprintf("%s future=%v", p.Dir, p.IsFuture))
		if !p.IsFuture {
			size = p.Size
		}
	})
	return dirs, size
}

// in says whether the replica is in dir alone.
func (mv *moveBroker) in(dir string) bool {
	dirs := mv.dirs()
	return len(dirs) == 1 && dirs[0] == dir+" future=false"
}

// other is the directory the replica is not in.
func (mv *moveBroker) other() string {
	if mv.in(mv.d2) {
		return mv.d1
	}
	return mv.d2
}

// request asks for the replica's move to dir.
func (mv *moveBroker) request(dir string) {
	mv.t.Helper()
	var req kadm.AlterReplicaLogDirsReq
	req.Add(dir, kadm.TopicsSet{mv.topic: {0: {}}})
	resps, err := mv.adm.AlterBrokerReplicaLogDirs(mv.ctx, 1, req)
	if err != nil {
		mv.t.Fatal(err)
	}
	resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
		if r.Err != nil {
			mv.t.Fatalf("move to %s: %v", dir, r.Err)
		}
	})
}
