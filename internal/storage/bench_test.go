package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/bufpool"
	"github.com/skein-log/skein/internal/vfs"
)

// benchLog opens a log on the real filesystem, closed when b ends.
func benchLog(b *testing.B, cfg Config) *Log {
	l, err := Open(vfs.OS{}, b.TempDir(), cfg, quietOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// benchBatch is 16 records of 1 KiB: about 16 KiB, a typical producer batch.
func benchBatch() []byte { return makeBatch(16, 1024, 1_700_000_000_000, 42) }

func BenchmarkAppend(b *testing.B) {
	for _, tc := range []struct {
		name        string
		syncEachOne bool
		data        []byte
	}{
		{"nosync", false, benchBatch()},
		{"sync-per-batch", true, benchBatch()},
		// A lone 100 B record per fsync: the lone-record path's disk
		// part, where the zero-filled window (zerotail.go) pays.
		{"sync-per-lone-record", true, makeBatch(1, 100, 1_700_000_000_000, 42)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := benchLog(b, DefaultConfig())
			data := tc.data
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(data, 0, int64(i)); err != nil {
					b.Fatal(err)
				}
				if tc.syncEachOne {
					if _, err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRead reads 1 MiB at a time: "fresh" (Read) allocates each
// read's buffer, "pooled" (ReadShared, what the broker's fetch path uses)
// takes it from internal/bufpool and gives it back, as the connection
// does once the answer is written.
//
//	go test -run '^$' -bench 'Read$' -benchmem -count 6 ./internal/storage/
//
// BenchmarkSyncLoneRecords3 is the disk part of the lone-record path of
// three brokers on one filesystem: three logs, each appending one 100 B
// record and syncing it, at once (each op is one record on each log).
// p50-us and p99-us are the append+Sync times of all three writers.
//
//	go test ./internal/storage/ -run '^$' -bench SyncLoneRecords3 -benchtime 1000x -count 6
func BenchmarkSyncLoneRecords3(b *testing.B) {
	const writers = 3
	logs := make([]*Log, writers)
	for i := range logs {
		logs[i] = benchLog(b, DefaultConfig())
	}
	data := makeBatch(1, 100, 1_700_000_000_000, 42)
	lat := make([][]time.Duration, writers)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := bytes.Clone(data)
			for range b.N {
				start := time.Now()
				if _, err := l.Append(own, 0, 0); err != nil {
					b.Error(err)
					return
				}
				if _, err := l.Sync(); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-us")
}

func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	l := benchLog(b, cfg)
	data := benchBatch()
	const batches = 4096 // 64 MiB over two segments
	for i := range batches {
		if _, err := l.Append(data, 0, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	const maxBytes = 1 << 20
	for _, pooled := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "pooled"}[pooled], func(b *testing.B) {
			b.ReportAllocs()
			var total int64
			offset := int64(0)
			for i := 0; i < b.N; i++ {
				var out []byte
				var ref *bufpool.Ref
				var err error
				if pooled {
					out, ref, err = l.ReadShared(offset, maxBytes, end, true)
				} else {
					out, err = l.Read(offset, maxBytes, end, true)
				}
				if err != nil {
					b.Fatal(err)
				}
				total += int64(len(out))
				offset += int64(len(out)/len(data)) * 16
				if offset >= end {
					offset = 0
				}
				ref.Release()
			}
			b.SetBytes(total / int64(b.N))
		})
	}
}

// BenchmarkAppendReplica is the follower's append of batches copied from
// the leader (offsets and epochs kept; the CRC is checked once, here).
func BenchmarkAppendReplica(b *testing.B) {
	l := benchLog(b, DefaultConfig())
	data := benchBatch()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	next := int64(0)
	for b.Loop() {
		batch.SetBaseOffset(data, next)
		if _, err := l.AppendReplica(data, next); err != nil {
			b.Fatal(err)
		}
		next += 16
	}
}

// BenchmarkAppendLeader compares the leader's two appends of a batch:
// "crc=checked" verifies the CRC (Append), "validated" trusts the produce
// handler's check (AppendValidated, what the produce path calls).
//
//	go test -run '^$' -bench AppendLeader -benchmem -count 6 ./internal/storage/
func BenchmarkAppendLeader(b *testing.B) {
	for _, tc := range []struct {
		name string
		fn   func(*Log, []byte, int32, int64) (AppendResult, error)
	}{{"crc=checked", (*Log).Append}, {"crc=trusted", (*Log).AppendValidated}} {
		b.Run(tc.name, func(b *testing.B) {
			l := benchLog(b, DefaultConfig())
			data := benchBatch()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.fn(l, data, 0, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadTail is a follower or consumer keeping up with a producer
// of lone records: each read asks for the batch just appended (one
// record of 100 B) in a log of such batches, so that the walk from the
// offset index's floor entry (one every index.interval.bytes, 4 KiB)
// crosses up to two dozen batch headers. preads/op counts the segment
// reads the walk and the read make.
//
//	go test -run '^$' -bench ReadTail -benchmem -count 6 ./internal/storage/
func BenchmarkReadTail(b *testing.B) {
	fs := &countingFS{FS: vfs.OS{}}
	l, err := Open(fs, b.TempDir(), DefaultConfig(), quietOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := makeBatch(1, 100, 1_700_000_000_000, 42)
	for range 1000 {
		if _, err := l.Append(data, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	fs.reads.Store(0)
	reads := 0
	for b.Loop() {
		end := l.LogEndOffset()
		if _, err := l.Append(data, 0, 0); err != nil {
			b.Fatal(err)
		}
		got, ref, err := l.ReadShared(end, 1<<20, end+1, true)
		if err != nil || len(got) == 0 {
			b.Fatalf("read at %d: %d bytes, %v", end, len(got), err)
		}
		ref.Release()
		reads++
	}
	b.ReportMetric(float64(fs.reads.Load())/float64(reads), "preads/op")
}

// BenchmarkReadTailFollowers is a leader's two followers keeping up with
// a producer: each op appends one batch (batch=16KiB: 16 records of 1 KiB,
// the Java producer's default batch.size; batch=1MiB: 1,024 of them, what
// skein perf and the cluster measurements send) and both followers read
// it from the tail, as ReadShared serves them. order=overlapping: the
// second reads while the first's answer still holds its buffer;
// order=after: the first answer is released before the second reads.
// preads/op counts the segment reads (with a buffer of their own each,
// two reads of index walk and data per follower).
//
//	go test -run '^$' -bench ReadTailFollowers -benchmem -count 6 ./internal/storage/
func BenchmarkReadTailFollowers(b *testing.B) {
	for _, size := range []int{16, 1024} {
		for _, order := range []string{"overlapping", "after"} {
			b.Run(fmt.Sprintf("batch=%s/order=%s", map[int]string{16: "16KiB", 1024: "1MiB"}[size], order), func(b *testing.B) {
				fs := &countingFS{FS: vfs.OS{}}
				cfg := DefaultConfig()
				cfg.SegmentBytes = 256 << 20
				l, err := Open(fs, b.TempDir(), cfg, quietOptions())
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				data := makeBatch(size, 1024, 1_700_000_000_000, 42)
				for range 4 {
					if _, err := l.Append(data, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				fs.reads.Store(0)
				appended := int64(0)
				for b.Loop() {
					if appended += int64(len(data)); appended > 200<<20 {
						// Stay within the segment: start the log again.
						b.StopTimer()
						if err := l.TruncateFullyAndStartAt(l.LogEndOffset()); err != nil {
							b.Fatal(err)
						}
						appended = 0
						b.StartTimer()
					}
					end := l.LogEndOffset()
					if _, err := l.Append(data, 0, 0); err != nil {
						b.Fatal(err)
					}
					first, ref1, err := l.ReadShared(end, 1<<20, end+int64(size), true)
					if err != nil || len(first) != len(data) {
						b.Fatalf("first follower's read at %d: %d bytes, %v", end, len(first), err)
					}
					if order == "after" {
						ref1.Release()
					}
					second, ref2, err := l.ReadShared(end, 1<<20, end+int64(size), true)
					if err != nil || len(second) != len(data) {
						b.Fatalf("second follower's read at %d: %d bytes, %v", end, len(second), err)
					}
					if order == "overlapping" {
						ref1.Release()
					}
					ref2.Release()
				}
				b.ReportMetric(float64(fs.reads.Load())/float64(b.N), "preads/op")
			})
		}
	}
}

// countingFS counts the reads of the logs' .log files.
type countingFS struct {
	vfs.FS
	reads atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &countingFile{File: f, reads: &c.reads}, nil
}

type countingFile struct {
	vfs.File
	reads *atomic.Int64
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(p, off)
}

// BenchmarkCloseMany closes empty, cleanly opened logs (the idle replicas
// of a broker with thousands of partitions stopping), parallel at a time:
// each close is fsyncs (index files, clean-shutdown marker, directory),
// so what it measures is the disk's, and the time per log.
//
//	go test -run '^$' -bench 'CloseMany' -count 3 ./internal/storage/
func BenchmarkCloseMany(b *testing.B) {
	const logs = 256
	for _, parallel := range []int{64, 256} {
		b.Run(fmt.Sprintf("parallel-%d", parallel), func(b *testing.B) {
			root := b.TempDir()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ls := make([]*Log, logs)
				for j := range ls {
					l, err := Open(vfs.OS{}, filepath.Join(root, strconv.Itoa(j)), DefaultConfig(), quietOptions())
					if err != nil {
						b.Fatal(err)
					}
					ls[j] = l
				}
				work := make(chan *Log)
				var wg sync.WaitGroup
				b.StartTimer()
				for range parallel {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for l := range work {
							if err := l.Close(); err != nil {
								b.Error(err)
							}
						}
					}()
				}
				for _, l := range ls {
					work <- l
				}
				close(work)
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*logs)/1e3, "µs/log")
		})
	}
}
