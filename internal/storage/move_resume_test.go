package storage

import (
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestMoveResumedAfterRestart interrupts a move (both logs closed mid-copy,
// as a broker stopping leaves them), changes the current log while it is
// down, recovers, and resumes: the future is kept as far as it is a prefix
// of the current log, and the finished move holds exactly the current
// log's batches.
func TestMoveResumedAfterRestart(t *testing.T) {
	cases := []struct {
		name string
		// change alters the reopened current log, given where the
		// future ended; it returns the lowest offset a kept future may
		// go on from and the highest (-1: it must start over).
		change func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (lo, hi int64)
	}{
		{"appended to", func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (int64, int64) {
			appendMore(t, src, appended, 9)
			return futEnd, futEnd
		}},
		{"truncated below the future's end, another epoch appended", func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (int64, int64) {
			cut := futEnd - 250
			if err := src.Truncate(cut); err != nil {
				t.Fatal(err)
			}
			for off := range appended {
				if off >= src.LogEndOffset() {
					delete(appended, off)
				}
			}
			cut = src.LogEndOffset()
			for src.LogEndOffset() <= futEnd+300 {
				appendMore(t, src, appended, 9)
			}
			return src.LogStartOffset() + 1, cut
		}},
		{"truncated below the future's end only", func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (int64, int64) {
			if err := src.Truncate(futEnd - 150); err != nil {
				t.Fatal(err)
			}
			for off := range appended {
				if off >= src.LogEndOffset() {
					delete(appended, off)
				}
			}
			return src.LogStartOffset() + 1, src.LogEndOffset()
		}},
		{"retention past the future's end", func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (int64, int64) {
			// Inside a batch (of 100 from 0): the fresh copy starts
			// at its base.
			if err := src.DeleteBefore(futEnd + 150); err != nil {
				t.Fatal(err)
			}
			return -1, -1
		}},
		{"retention inside what the future holds", func(t *testing.T, src *Log, appended map[int64][]byte, futEnd int64) (int64, int64) {
			if err := src.DeleteBefore(futEnd - 1000); err != nil {
				t.Fatal(err)
			}
			appendMore(t, src, appended, 9)
			return futEnd, futEnd
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			src, appended := fillSource(t, fs, 60)
			futDir := FutureDir("/b", "t-0", "m1")
			fut := openLog(t, fs, futDir, moveConfig())
			if err := fut.TruncateFullyAndStartAt(src.LogStartOffset()); err != nil {
				t.Fatal(err)
			}
			for fut.LogEndOffset() < src.LogEndOffset()/2 {
				if _, err := fut.CopyFrom(src, fut.LogEndOffset(), 4096); err != nil {
					t.Fatal(err)
				}
			}
			futEnd := fut.LogEndOffset()
			if err := fut.Close(); err != nil {
				t.Fatal(err)
			}
			if err := src.Close(); err != nil {
				t.Fatal(err)
			}

			resumed, err := RecoverMoves(fs, moveRoots, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			if mv := resumed["t-0"]; mv.Root != "/b" || mv.Future != futDir {
				t.Fatalf("recovery resumes %+v", resumed)
			}
			src = openLog(t, fs, "/a/t-0", moveConfig())
			defer src.Close()
			lo, hi := c.change(t, src, appended, futEnd)
			fut = openLog(t, fs, futDir, moveConfig())
			if fut.LogEndOffset() != futEnd {
				t.Fatalf("the future reopened ends at %d, closed at %d", fut.LogEndOffset(), futEnd)
			}
			from, err := src.ResumeFuture(fut)
			if err != nil {
				t.Fatal(err)
			}
			if from != fut.LogEndOffset() {
				t.Fatalf("resumes from %d, the future ends at %d", from, fut.LogEndOffset())
			}
			if hi < 0 {
				if from != src.LogStartOffset() || fut.LogStartOffset() != from {
					t.Fatalf("resumes from %d (future %d..%d), want a fresh copy from %d", from, fut.LogStartOffset(), fut.LogEndOffset(), src.LogStartOffset())
				}
			} else if from < lo || from > hi {
				t.Fatalf("resumes from %d, want %d..%d (the future ended at %d)", from, lo, hi, futEnd)
			}
			want := readAll(t, src)
			if err := moveScriptFrom(src, fut); err != nil {
				t.Fatal(err)
			}
			if src.Dir() != "/b/t-0" {
				t.Fatalf("log in %s after the move", src.Dir())
			}
			sameBatches(t, readAll(t, src), want, "after the move")
			checkBatches(t, src, appended, src.LogEndOffset(), "after the move")
		})
	}
}

// appendMore appends 5 batches of 20 records at epoch.
func appendMore(t *testing.T, l *Log, appended map[int64][]byte, epoch int32) {
	t.Helper()
	for i := range 5 {
		b := makeBatch(20, 30, 8000, byte(50+i))
		res := mustAppend(t, l, b, epoch, 8000)
		appended[res.BaseOffset] = b
	}
}

// TestMoveOfALogStartingInsideABatch: after DeleteRecords the current log
// starts inside a batch; the future starts at that batch's base and the
// swap drops the head below the start again.
func TestMoveOfALogStartingInsideABatch(t *testing.T) {
	fs := vfs.NewMem()
	src, appended := fillSource(t, fs, 30)
	defer src.Close()
	if err := src.DeleteBefore(1050); err != nil {
		t.Fatal(err)
	}
	fut := openLog(t, fs, FutureDir("/b", "t-0", "m1"), moveConfig())
	if err := fut.TruncateFullyAndStartAt(src.LogStartOffset()); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, src)
	if err := moveScriptFrom(src, fut); err != nil {
		t.Fatal(err)
	}
	if src.Dir() != "/b/t-0" || src.LogStartOffset() != 1050 {
		t.Fatalf("after the move: %s from %d", src.Dir(), src.LogStartOffset())
	}
	sameBatches(t, readAll(t, src), want, "after the move")
	checkBatches(t, src, appended, src.LogEndOffset(), "after the move")
}
