package storage

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/logmove"
	"github.com/skein-log/skein/internal/vfs"
)

// moveRoots are the two log directories of the move tests.
var moveRoots = []string{"/a", "/b"}

// moveScript moves src's log to /b while appending between copy steps, as
// a broker's copier and producers would (the pause holds appends off, as
// the partition's lock does). appended records every batch appended, by
// base offset. It returns the first error (a crash stops it).
//
// Midway it also does what a follower and retention do to a log while it
// moves: truncates its tail (lowering *durable, the offset below which
// the test expects everything to survive) and deletes its head.
func moveScript(src *Log, appended map[int64][]byte, seed byte, durable *int64) error {
	fut, err := Open(src.fs, FutureDir("/b", filepath.Base(src.Dir()), "m1"), src.Config(), quietOptions())
	if err != nil {
		return err
	}
	if err := fut.TruncateFullyAndStartAt(src.LogStartOffset()); err != nil {
		return err
	}
	appendOne := func() error {
		b := makeBatch(3, 40, 1000, seed)
		seed++
		res, err := src.Append(b, 5, 1000)
		if err != nil {
			return err
		}
		appended[res.BaseOffset] = b
		return nil
	}
	paused := false
	copies := 0
	for range 10_000 {
		rw, has := src.TakeRewound()
		st := logmove.Next(logmove.Progress{
			SrcStart: src.LogStartOffset(), SrcEnd: src.LogEndOffset(),
			FutStart: fut.LogStartOffset(), FutEnd: fut.LogEndOffset(),
			Rewound: rw, HasRewound: has, Paused: paused,
		})
		switch st.Kind {
		case logmove.Copy:
			if _, err := fut.CopyFrom(src, st.Offset, 700); err != nil {
				return err
			}
			copies++
			switch copies {
			case 4:
				// A follower cutting a divergent tail, into what the
				// copy has passed, then taking other batches there.
				cut := fut.LogEndOffset() - 9
				// The batch holding cut goes, and a crash inside
				// Truncate may leave the log cut already.
				for off := range appended {
					if off <= cut && off+100 > cut {
						*durable = min(*durable, off)
					}
				}
				if err := src.Truncate(cut); err != nil {
					return err
				}
				for off := range appended {
					if off >= src.LogEndOffset() {
						delete(appended, off)
					}
				}
				*durable = min(*durable, src.LogEndOffset())
				// More than was cut (a batch of 100), so that only
				// the rewound mark tells the copier its copy of the
				// tail is stale.
				for range 40 {
					if err := appendOne(); err != nil {
						return err
					}
				}
			case 6:
				if err := src.DeleteBefore(7); err != nil {
					return err
				}
			}
			if !paused && seed%3 == 0 {
				if err := appendOne(); err != nil {
					return err
				}
			}
			seed++
		case logmove.Truncate:
			if err := fut.Truncate(st.Offset); err != nil {
				return err
			}
		case logmove.Reset:
			if err := fut.TruncateFullyAndStartAt(st.Offset); err != nil {
				return err
			}
		case logmove.Pause:
			paused = true
		case logmove.Release:
			paused = false
		case logmove.Swap:
			_, err := src.AdoptFuture(fut)
			return err
		}
	}
	return errors.New("move did not finish")
}

// moveConfig has a few batches per segment, each of 100 offsets, so that
// a log of a few dozen batches is more than logmove.PauseLagOffsets long
// and the copier copies unpaused, alongside appends, before it pauses.
func moveConfig() Config {
	c := smallConfig()
	c.SegmentBytes = 8192
	return c
}

// fillSource creates /a/t-0 with n synced batches of 100 records.
func fillSource(t *testing.T, fs vfs.FS, n int) (*Log, map[int64][]byte) {
	t.Helper()
	src := openLog(t, fs, "/a/t-0", moveConfig())
	appended := map[int64][]byte{}
	for i := range n {
		b := makeBatch(100, 5, int64(1000+i), byte(i))
		res := mustAppend(t, src, b, int32(1+i/20), int64(1000+i))
		appended[res.BaseOffset] = b
	}
	if _, err := src.Sync(); err != nil {
		t.Fatal(err)
	}
	return src, appended
}

// checkBatches compares the log's batches with what was appended at their
// offsets (leader epochs and offsets are stamped in place on append, so the
// stored bytes equal the appended slices).
func checkBatches(t *testing.T, l *Log, appended map[int64][]byte, durable int64, label string) {
	t.Helper()
	if l.LogEndOffset() < durable {
		t.Fatalf("%s: log ends at %d, %d were durable", label, l.LogEndOffset(), durable)
	}
	next := l.LogStartOffset()
	for i, b := range readAll(t, l) {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		// The first batch may begin below the log start (DeleteBefore
		// cuts inside it); every other one begins where the last ended.
		if h.BaseOffset != next && (i > 0 || h.BaseOffset > next || h.LastOffset() < next) {
			t.Fatalf("%s: batch at %d, want %d (a lost or extra batch)", label, h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		if want, ok := appended[h.BaseOffset]; !ok || !bytes.Equal(want, b) {
			t.Fatalf("%s: the batch at %d is not the one appended there", label, h.BaseOffset)
		}
	}
}

func TestMoveWhileAppending(t *testing.T) {
	fs := vfs.NewMem()
	src, appended := fillSource(t, fs, 60)
	if err := src.AddAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 3, LastStableOffset: 0}); err != nil {
		t.Fatal(err)
	}
	epochsBefore := src.Epochs().Entries()
	durable := src.LogEndOffset()
	if err := moveScript(src, appended, 100, &durable); err != nil {
		t.Fatalf("move: %v", err)
	}
	if got := src.Dir(); got != "/b/t-0" {
		t.Fatalf("dir after move: %s", got)
	}
	for _, gone := range []string{"/a/t-0", "/b/t-0.m1-future"} {
		if ok, _ := vfs.Exists(fs, gone); ok {
			t.Fatalf("%s still there", gone)
		}
	}
	if ok, _ := vfs.Exists(fs, "/a/t-0.m1-delete"); !ok {
		t.Fatal("old log not renamed -delete")
	}
	// The same *Log takes appends and syncs in its new place.
	b := makeBatch(2, 10, 5000, 9)
	res := mustAppend(t, src, b, 9, 5000)
	appended[res.BaseOffset] = b
	if d, err := src.Sync(); err != nil || d != src.LogEndOffset() {
		t.Fatalf("sync after move: %d %v", d, err)
	}
	checkBatches(t, src, appended, src.LogEndOffset(), "after move")
	// Epoch 1, what the truncation and DeleteBefore left of the first, 5 of the
	// appends during the move, 9 of the one after.
	if got := src.Epochs().Entries(); len(got) != 3 || got[0].Epoch != epochsBefore[0].Epoch || got[1].Epoch != 5 || got[2].Epoch != 9 {
		t.Fatalf("epochs after move: %v, before %v", got, epochsBefore)
	}
	if got := src.AllAbortedTxns(); len(got) != 1 || got[0].ProducerID != 7 {
		t.Fatalf("aborted transactions after move: %v", got)
	}
	end := src.LogEndOffset()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, fs, "/b/t-0", moveConfig())
	defer re.Close()
	checkBatches(t, re, appended, end, "reopened")
	if re.LogEndOffset() != end {
		t.Fatalf("reopened log ends at %d, want %d", re.LogEndOffset(), end)
	}
}

func TestMoveFollowsTruncation(t *testing.T) {
	fs := vfs.NewMem()
	src, appended := fillSource(t, fs, 30)
	fut := openLog(t, fs, FutureDir("/b", "t-0", "m1"), moveConfig())
	for fut.LogEndOffset() < src.LogEndOffset() {
		if _, err := fut.CopyFrom(src, fut.LogEndOffset(), 4096); err != nil {
			t.Fatal(err)
		}
	}
	// A follower truncating its divergent tail, then appending other
	// batches at the same offsets.
	cut := src.LogEndOffset() - 20
	if err := src.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	for k := range appended {
		if k >= src.LogEndOffset() {
			delete(appended, k)
		}
	}
	// More than was cut, so the current log ends past the future again:
	// only the rewound mark tells the copier its tail is stale.
	for i := range 40 {
		b := makeBatch(4, 30, 9000, byte(200+i))
		res := mustAppend(t, src, b, 20, 9000)
		appended[res.BaseOffset] = b
	}
	rw, has := src.TakeRewound()
	st := logmove.Next(logmove.Progress{SrcStart: src.LogStartOffset(), SrcEnd: src.LogEndOffset(), FutStart: fut.LogStartOffset(), FutEnd: fut.LogEndOffset(), Rewound: rw, HasRewound: has})
	if st.Kind != logmove.Truncate || st.Offset > cut {
		t.Fatalf("after a truncation to %d: %v at %d", cut, st.Kind, st.Offset)
	}
	if err := fut.Truncate(st.Offset); err != nil {
		t.Fatal(err)
	}
	// Adopting before catching up is refused and changes nothing.
	if _, err := src.AdoptFuture(fut); !errors.Is(err, ErrFutureBehind) {
		t.Fatalf("adopt behind: %v", err)
	}
	if err := moveScriptFrom(src, fut); err != nil {
		t.Fatal(err)
	}
	checkBatches(t, src, appended, src.LogEndOffset(), "after move")
	if len(readAll(t, src)) != len(appended) {
		t.Fatalf("%d batches after move, %d appended", len(readAll(t, src)), len(appended))
	}
	src.Close()
}

// moveScriptFrom finishes a move into fut without appends.
func moveScriptFrom(src, fut *Log) error {
	paused := false
	for range 10_000 {
		rw, has := src.TakeRewound()
		st := logmove.Next(logmove.Progress{SrcStart: src.LogStartOffset(), SrcEnd: src.LogEndOffset(), FutStart: fut.LogStartOffset(), FutEnd: fut.LogEndOffset(), Rewound: rw, HasRewound: has, Paused: paused})
		var err error
		switch st.Kind {
		case logmove.Copy:
			_, err = fut.CopyFrom(src, st.Offset, 4096)
		case logmove.Truncate:
			err = fut.Truncate(st.Offset)
		case logmove.Reset:
			err = fut.TruncateFullyAndStartAt(st.Offset)
		case logmove.Pause:
			paused = true
		case logmove.Release:
			paused = false
		case logmove.Swap:
			_, err = src.AdoptFuture(fut)
			return err
		}
		if err != nil {
			return err
		}
	}
	return errors.New("move did not finish")
}

// TestMoveCrashAtEveryCall loses power at every filesystem call of a move
// (creating the future, copying, appends alongside, the swap's marker,
// renames and directory syncs), then recovers: exactly one log of the
// partition remains, at most one future (the move's, to resume), and it
// holds everything that was durable before the crash, every batch as
// appended. A kept future is then resumed (logmove.ResumeFrom) after the
// current log is appended to, and at half the points cut, and the move
// finished: the log in its new place holds every batch as appended.
func TestMoveCrashAtEveryCall(t *testing.T) {
	count := func() int {
		fs := vfs.NewMem()
		src, appended := fillSource(t, fs, 60)
		c := &crasher{fs: fs}
		fs.SetFault(c.fault)
		durable := src.LogEndOffset()
		if err := moveScript(src, appended, 100, &durable); err != nil {
			t.Fatalf("uninterrupted move: %v", err)
		}
		return c.count
	}
	total := count()
	t.Logf("an uninterrupted move makes %d filesystem calls", total)
	whole, cutBack := 0, 0
	for at := 1; at <= total+1; at++ {
		for _, torn := range []bool{false, true} {
			label := fmt.Sprintf("crash at call %d/%d torn=%v", at, total, torn)
			fs := vfs.NewMem()
			src, appended := fillSource(t, fs, 60)
			durable := src.LogEndOffset()
			c := &crasher{fs: fs, at: at, opts: vfs.CrashOptions{TornWrites: torn, Seed: uint64(at)}}
			fs.SetFault(c.fault)
			err := moveScript(src, appended, 100, &durable)
			if err == nil {
				durable = src.LogEndOffset() // the swap synced everything
			}
			if !c.crashed {
				fs.Crash(c.opts)
			}
			fs.SetFault(nil)
			resumed, err2 := RecoverMoves(fs, moveRoots, quietOptions())
			if err2 != nil {
				t.Fatalf("%s: recover: %v", label, err2)
			}
			var live []string
			var futures []string
			for _, root := range moveRoots {
				entries, err := fs.ReadDir(root)
				if err != nil {
					continue
				}
				for _, e := range entries {
					if e.Name == "t-0" {
						live = append(live, filepath.Join(root, e.Name))
					} else if _, _, ok := ParseFutureDirName(e.Name); ok {
						futures = append(futures, filepath.Join(root, e.Name))
					}
				}
			}
			if len(live) != 1 {
				t.Fatalf("%s: partition directories after recovery: %v", label, live)
			}
			if err == nil && live[0] != "/b/t-0" {
				t.Fatalf("%s: finished move but the log is in %s", label, live[0])
			}
			mv, ok := resumed["t-0"]
			switch {
			case len(futures) > 1:
				t.Fatalf("%s: futures left after recovery: %v", label, futures)
			case len(futures) == 1 && (!ok || mv.Future != futures[0] || mv.Root != "/b"):
				t.Fatalf("%s: future %s left, recovery resumes %+v", label, futures[0], resumed)
			case len(futures) == 0 && ok:
				t.Fatalf("%s: recovery resumes %+v, no future left", label, mv)
			}
			l := openLog(t, fs, live[0], moveConfig())
			checkBatches(t, l, appended, durable, label)
			if ok, _ := vfs.Exists(fs, filepath.Join(live[0], moveMarkerFile)); ok {
				t.Fatalf("%s: move marker left in %s", label, live[0])
			}
			if ok {
				// The move goes on from what the future holds, after
				// the current log moved on: appended to, and at every
				// other crash point first cut below where the future
				// may end.
				if at%2 == 1 {
					cut := max(l.LogStartOffset(), l.LogEndOffset()-150)
					if err := l.Truncate(cut); err != nil {
						t.Fatalf("%s: %v", label, err)
					}
					for off := range appended {
						if off >= l.LogEndOffset() {
							delete(appended, off)
						}
					}
					durable = min(durable, l.LogEndOffset())
				}
				for i := range 3 {
					b := makeBatch(2, 30, 7000, byte(i))
					res := mustAppend(t, l, b, 7, 7000)
					appended[res.BaseOffset] = b
				}
				fut := openLog(t, fs, mv.Future, moveConfig())
				futEnd := fut.LogEndOffset()
				from, err := l.ResumeFuture(fut)
				if err != nil {
					t.Fatalf("%s: resume: %v", label, err)
				}
				switch {
				case from == futEnd && from > fut.LogStartOffset():
					whole++
				case from > fut.LogStartOffset():
					cutBack++
				}
				if from > futEnd || from != fut.LogEndOffset() {
					t.Fatalf("%s: resumes from %d, the future ended at %d and ends at %d", label, from, futEnd, fut.LogEndOffset())
				}
				if err := moveScriptFrom(l, fut); err != nil {
					t.Fatalf("%s: resumed move: %v", label, err)
				}
				if l.Dir() != "/b/t-0" {
					t.Fatalf("%s: resumed move left the log in %s", label, l.Dir())
				}
				checkBatches(t, l, appended, l.LogEndOffset(), label+" resumed")
			}
			l.Close()
		}
	}
	t.Logf("of %d crash points, %d resumed into the whole future log, %d into a future cut back", 2*(total+1), whole, cutBack)
	if whole == 0 || cutBack == 0 {
		t.Fatal("no crash point kept the whole future log, or none cut it back")
	}
}
