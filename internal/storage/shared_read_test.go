package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/bufpool"
	"github.com/skein-log/skein/internal/vfs"
)

// Two reads of the tail while the first is held: the second shares the
// first's buffer and reads nothing from the file; once every hold is
// released, a read goes to the file again (the log keeps no buffer).
func TestReadSharedReadsTheTailOnce(t *testing.T) {
	fs := &countingFS{FS: vfs.NewMem()}
	l := openLog(t, fs, "/p", DefaultConfig())
	defer l.Close()
	fillLog(t, l, 10, 0)
	tail := l.LogEndOffset()
	mustAppend(t, l, makeBatch(50, 1000, 5000, 7), 0, 0) // over bufpool.Min
	end := l.LogEndOffset()

	before := fs.reads.Load()
	a, refA, err := l.ReadShared(tail, 1<<20, end, true)
	if err != nil || len(a) == 0 {
		t.Fatalf("first read: %d bytes, %v", len(a), err)
	}
	first := fs.reads.Load() - before
	b, refB, err := l.ReadShared(tail, 1<<20, end, true)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("second read: %d bytes, %v; want the first's %d", len(b), err, len(a))
	}
	if refA != refB || &a[0] != &b[0] {
		t.Fatal("second read did not share the first's buffer")
	}
	if n := fs.reads.Load() - before - first; n != 0 {
		t.Fatalf("second read read the file %d times", n)
	}
	refA.Release()
	if c, refC, err := l.ReadShared(tail, 1<<20, end, true); err != nil || refC != refB || !bytes.Equal(c, a) {
		t.Fatalf("read while one hold is left: shared %v, %v", refC == refB, err)
	} else {
		refC.Release()
	}
	refB.Release()
	mid := fs.reads.Load()
	d, refD, err := l.ReadShared(tail, 1<<20, end, true)
	if err != nil || !bytes.Equal(d, a) || refD == refA {
		t.Fatalf("read after every release: shared %v, %v", refD == refA, err)
	}
	if fs.reads.Load() == mid {
		t.Fatal("read after every release did not read the file")
	}
	refD.Release()
}

// A shared read checks the CRC of a batch the first read held but did
// not return (its upTo was lower): the corruption is found as a fresh
// read finds it.
func TestReadSharedChecksWhatTheFirstReadDidNotReturn(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", DefaultConfig())
	defer l.Close()
	r1 := mustAppend(t, l, makeBatch(40, 1000, 1000, 1), 0, 0)
	r2 := mustAppend(t, l, makeBatch(40, 1000, 2000, 2), 0, 0)
	if err := fs.Corrupt(segmentFileName("/p", 0, logSuffix), r2.Position+int64(r2.Size)-3, 0x10); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	a, ref, err := l.ReadShared(0, 1<<20, r1.LastOffset+1, true)
	if err != nil || len(a) != r1.Size {
		t.Fatalf("read of the first batch: %d bytes, %v; want %d", len(a), err, r1.Size)
	}
	defer ref.Release()
	if _, err := l.Read(0, 1<<20, end, true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("fresh read over the damage: %v, want ErrCorrupt", err)
	}
	if b, refB, err := l.ReadShared(0, 1<<20, end, true); !errors.Is(err, ErrCorrupt) || b != nil || refB != nil {
		t.Fatalf("shared read over the damage: %d bytes, %v; want ErrCorrupt", len(b), err)
	}
}

// A truncation drops the shared read: the appends after it write other
// bytes at the same offsets and positions, and a read there returns
// those, however long the old read stays held.
func TestReadSharedAfterTruncation(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", DefaultConfig())
	defer l.Close()
	fillLog(t, l, 5, 0)
	tail := l.LogEndOffset()
	mustAppend(t, l, makeBatch(40, 1000, 1000, 1), 0, 0)
	old, ref, err := l.ReadShared(tail, 1<<20, l.LogEndOffset(), true)
	if err != nil || len(old) == 0 {
		t.Fatalf("read: %d bytes, %v", len(old), err)
	}
	defer ref.Release()
	if err := l.Truncate(tail); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(40, 1000, 9000, 9), 1, 0)
	want, err := l.Read(tail, 1<<20, l.LogEndOffset(), true)
	if err != nil || bytes.Equal(want, old) {
		t.Fatalf("fresh read after the truncation: %v, same bytes %v", err, bytes.Equal(want, old))
	}
	got, refNew, err := l.ReadShared(tail, 1<<20, l.LogEndOffset(), true)
	if err != nil || !bytes.Equal(got, want) || refNew == ref {
		t.Fatalf("shared read after the truncation: %v, returned the new bytes %v", err, bytes.Equal(got, want))
	}
	refNew.Release()
}

// TestReadSharedAgreesWithRead runs random appends, reads (the tail and
// elsewhere, random limits, some held a while), truncations, deletions
// below the log start and segment rolls, and checks every shared read
// against a fresh Read of the same arguments, byte for byte and error for
// error. It also checks that reads were shared.
func TestReadSharedAgreesWithRead(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 14))
		cfg := smallConfig()
		cfg.SegmentBytes = 256 << 10
		cfg.IndexIntervalBytes = 4096
		fs := &countingFS{FS: vfs.NewMem()}
		l := openLog(t, fs, "/p", cfg)
		var held []*bufpool.Ref
		shared, epoch, last := 0, int32(0), int64(0)
		for step := range 600 {
			switch op := rng.IntN(20); {
			case op < 8:
				b := makeBatch(1+rng.IntN(40), 10+rng.IntN(2000), int64(step), byte(step))
				mustAppend(t, l, b, epoch, int64(step))
			case op < 17:
				leo, start := l.LogEndOffset(), l.LogStartOffset()
				offset := leo - int64(rng.IntN(60))
				switch rng.IntN(4) {
				case 0:
					offset = start + rng.Int64N(leo-start+2) - 1
				case 1, 2:
					offset = last // where a held read may still be
				}
				last = offset
				maxBytes := []int{0, 100, 16 << 10, 200 << 10, 1 << 20}[rng.IntN(5)]
				upTo := leo - int64(rng.IntN(3))*int64(rng.IntN(30))
				minOne := rng.IntN(3) > 0
				want, werr := l.Read(offset, maxBytes, upTo, minOne)
				// Twice, as the second follower of a partition asks.
				for range 2 {
					reads := fs.reads.Load()
					got, ref, err := l.ReadShared(offset, maxBytes, upTo, minOne)
					if !bytes.Equal(got, want) || (err == nil) != (werr == nil) || (err != nil && !errors.Is(err, ErrOffsetOutOfRange) && !errors.Is(werr, ErrOffsetOutOfRange) && err.Error() != werr.Error()) {
						t.Fatalf("seed %d step %d: ReadShared(%d, %d, %d, %v) = %d bytes, %v; Read = %d bytes, %v", seed, step, offset, maxBytes, upTo, minOne, len(got), err, len(want), werr)
					}
					if (ref == nil) != (len(got) == 0) {
						t.Fatalf("seed %d step %d: %d bytes held by %v", seed, step, len(got), ref)
					}
					if ref != nil && fs.reads.Load() == reads {
						shared++
					}
					if ref != nil && rng.IntN(2) == 0 {
						held = append(held, ref)
					} else {
						ref.Release()
					}
				}
				for len(held) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(held))
					held[i].Release()
					held = append(held[:i], held[i+1:]...)
				}
			case op < 18:
				leo := l.LogEndOffset()
				to := leo - int64(rng.IntN(50))
				if to < l.LogStartOffset() {
					to = l.LogStartOffset()
				}
				if err := l.Truncate(to); err != nil {
					t.Fatalf("seed %d: truncate to %d: %v", seed, to, err)
				}
				epoch++
			case op < 19:
				leo, start := l.LogEndOffset(), l.LogStartOffset()
				if leo-start > 400 {
					if err := l.DeleteBefore(start + rng.Int64N(leo-start-300)); err != nil {
						t.Fatalf("seed %d: delete: %v", seed, err)
					}
				}
			default:
				if err := l.MaybeRoll(int64(step)); err != nil {
					t.Fatalf("seed %d: roll: %v", seed, err)
				}
			}
		}
		for _, r := range held {
			r.Release()
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if shared == 0 {
			t.Fatalf("seed %d: no read was shared", seed)
		}
	}
}

// A read stays pinned for the next read of the same bytes after its
// answer released it (a follower asking after the other's answer was
// written), within maxSharedPinned over all logs; the read that shares it,
// a read of other bytes, or Close unpins it.
func TestReadSharedPinsUntilShared(t *testing.T) {
	base := sharedPinned.Load()
	var logs []*Log
	for i := range maxSharedPinned/(256<<10) + 4 {
		fs := &countingFS{FS: vfs.NewMem()}
		l := openLog(t, fs, "/p", DefaultConfig())
		mustAppend(t, l, makeBatch(200, 1000, 1000, byte(i)), 0, 0) // 200 KB: a 256 KiB buffer
		logs = append(logs, l)
		a, ref, err := l.ReadShared(0, 1<<20, l.LogEndOffset(), true)
		if err != nil || len(a) == 0 {
			t.Fatal(err)
		}
		ref.Release()
		if pinned := sharedPinned.Load() - base; pinned > maxSharedPinned {
			t.Fatalf("%d bytes pinned, bound %d", pinned, maxSharedPinned)
		}
		if i > 0 {
			continue
		}
		reads := fs.reads.Load()
		b, refB, err := l.ReadShared(0, 1<<20, l.LogEndOffset(), true)
		if err != nil || !bytes.Equal(a, b) || fs.reads.Load() != reads {
			t.Fatalf("read after the first answer's release: %v, read the file %v", err, fs.reads.Load() != reads)
		}
		refB.Release()
		if l.shared.Load().pinned.Load() {
			t.Fatal("still pinned after the read it was kept for")
		}
		// Nothing holds it now: the next read reads afresh and is pinned
		// for the one after.
		for j, wantRead := range []bool{true, false} {
			reads := fs.reads.Load()
			_, refC, err := l.ReadShared(0, 1<<20, l.LogEndOffset(), true)
			if err != nil || refC == nil || (fs.reads.Load() != reads) != wantRead {
				t.Fatalf("read %d after the pair: %v, read the file %v, want %v", j, err, fs.reads.Load() != reads, wantRead)
			}
			refC.Release()
		}
	}
	if sharedPinned.Load()-base == 0 {
		t.Fatal("nothing pinned")
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if pinned := sharedPinned.Load() - base; pinned != 0 {
		t.Fatalf("%d bytes still pinned after every log closed", pinned)
	}
}

// Readers sharing the tail while it grows and is now and then cut: every
// batch a shared read returns is the one appended at its offset (since the
// last cut), so no reader ever sees a buffer given back to the pool while
// it held it (with -tags invariants a released buffer is poisoned, and
// each hold is checked again before its release) or bytes from before a
// truncation.
func TestReadSharedConcurrent(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", DefaultConfig())
	defer l.Close()
	// Reads and their checks take mu's read lock, appends and cuts its
	// write lock: what a read returns is checked against the log as it
	// was read. The readers run, and share buffers, concurrently.
	var mu sync.RWMutex
	appended := map[int64][]byte{} // base offset -> batch, since the last cut
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			type hold struct {
				data []byte
				ref  *bufpool.Ref
			}
			var held []hold
			// release checks that a held buffer still holds what was read
			// into it before letting it go.
			release := func(h hold) {
				if err := batch.Split(h.data, func(b []byte) error { _, err := batch.ValidateStored(b); return err }); err != nil {
					t.Errorf("a held read changed: %v", err)
				}
				h.ref.Release()
			}
			for {
				select {
				case <-stop:
					for _, h := range held {
						release(h)
					}
					return
				default:
				}
				mu.RLock()
				leo := l.LogEndOffset()
				offset := max(leo-int64(rng.IntN(3))*40, 0)
				data, ref, err := l.ReadShared(offset, 1<<20, leo, true)
				if err != nil {
					mu.RUnlock()
					t.Errorf("read at %d: %v", offset, err)
					return
				}
				err = batch.Split(data, func(b []byte) error {
					h, err := batch.ValidateStored(b)
					if err != nil {
						return err
					}
					if want, ok := appended[h.BaseOffset]; ok && !bytes.Equal(b, want) {
						return fmt.Errorf("batch at %d is not the one appended there", h.BaseOffset)
					}
					return nil
				})
				mu.RUnlock()
				if err != nil {
					t.Errorf("read at %d: %v", offset, err)
					return
				}
				if ref != nil {
					held = append(held, hold{data, ref})
				}
				for len(held) > rng.IntN(3) {
					release(held[0])
					held = held[1:]
				}
			}
		}()
	}
	for i := range 2000 {
		b := makeBatch(40, 1000+i%7, int64(i), byte(i))
		mu.Lock()
		if i%97 == 96 {
			to := max(l.LogEndOffset()-80, 0)
			if err := l.Truncate(to); err != nil {
				t.Fatal(err)
			}
			for off := range appended {
				if off >= to {
					delete(appended, off)
				}
			}
		}
		res := mustAppend(t, l, b, int32(i/97), 0)
		appended[res.BaseOffset] = append([]byte(nil), b...)
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
}
