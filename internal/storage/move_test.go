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
			l, mv, ok := recoverMove(t, fs, appended, durable, label)
			if err == nil && l.Dir() != "/b/t-0" {
				t.Fatalf("%s: finished move but the log is in %s", label, l.Dir())
			}
			if ok {
				changeCurrent(t, l, appended, &durable, at%2 == 1, label)
				fut, from, futEnd := resumeMove(t, fs, l, mv, label)
				switch {
				case from == futEnd && from > fut.LogStartOffset():
					whole++
				case from > fut.LogStartOffset():
					cutBack++
				}
				finishMove(t, l, fut, appended, label)
			}
			l.Close()
		}
	}
	t.Logf("of %d crash points, %d resumed into the whole future log, %d into a future cut back", 2*(total+1), whole, cutBack)
	if whole == 0 || cutBack == 0 {
		t.Fatal("no crash point kept the whole future log, or none cut it back")
	}
}

// recoverMove runs RecoverMoves after a crash and checks what it left: one
// partition directory, holding every batch as appended and everything
// below durable, no move marker, and at most one future, the one it
// resumes. It returns the log, open, and the move to resume (ok).
func recoverMove(t *testing.T, fs *vfs.Mem, appended map[int64][]byte, durable int64, label string) (*Log, ResumedMove, bool) {
	t.Helper()
	resumed, err := RecoverMoves(fs, moveRoots, quietOptions())
	if err != nil {
		t.Fatalf("%s: recover: %v", label, err)
	}
	var live, futures []string
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
	return l, mv, ok
}

// changeCurrent does to the current log what may happen to it before its
// move resumes: cut below where the future may end (when cut), and
// appended to at a new epoch.
func changeCurrent(t *testing.T, l *Log, appended map[int64][]byte, durable *int64, cut bool, label string) {
	t.Helper()
	if cut {
		if err := l.Truncate(max(l.LogStartOffset(), l.LogEndOffset()-150)); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		for off := range appended {
			if off >= l.LogEndOffset() {
				delete(appended, off)
			}
		}
		*durable = min(*durable, l.LogEndOffset())
	}
	for i := range 3 {
		b := makeBatch(2, 30, 7000, byte(i))
		res := mustAppend(t, l, b, 7, 7000)
		appended[res.BaseOffset] = b
	}
}

// resumeMove opens mv's future and readies it (Log.ResumeFuture). It
// returns the future, where the copy goes on and where the future ended
// when opened.
func resumeMove(t *testing.T, fs vfs.FS, l *Log, mv ResumedMove, label string) (fut *Log, from, futEnd int64) {
	t.Helper()
	fut = openLog(t, fs, mv.Future, moveConfig())
	futEnd = fut.LogEndOffset()
	from, err := l.ResumeFuture(fut)
	if err != nil {
		t.Fatalf("%s: resume: %v", label, err)
	}
	if from > futEnd || from != fut.LogEndOffset() {
		t.Fatalf("%s: resumes from %d, the future ended at %d and ends at %d", label, from, futEnd, fut.LogEndOffset())
	}
	return fut, from, futEnd
}

// finishMove finishes the move of l into fut (no appends) and checks the
// log in its new place holds every batch as appended.
func finishMove(t *testing.T, l, fut *Log, appended map[int64][]byte, label string) {
	t.Helper()
	if err := moveScriptFrom(l, fut); err != nil {
		t.Fatalf("%s: resumed move: %v", label, err)
	}
	if l.Dir() != "/b/t-0" {
		t.Fatalf("%s: resumed move left the log in %s", label, l.Dir())
	}
	checkBatches(t, l, appended, l.LogEndOffset(), label+" resumed")
}

// TestMoveCrashWhileResuming loses power during a move, recovers, changes
// the current log (cut, appended, synced), and loses power again at every
// filesystem call of the resumed move (ResumeFuture's cuts, the copy, the
// swap); recovers again and resumes once more: nothing durable is lost and
// the move ends with every batch as appended.
func TestMoveCrashWhileResuming(t *testing.T) {
	// first crashes at some of the first move's calls; each run below
	// checks it left a future to resume.
	firsts := []int{60, 150, 216, 251, 300}
	runs := 0
	for _, first := range firsts {
		for second := 1; ; second++ {
			label := fmt.Sprintf("crash at call %d, then at call %d of the resumed move", first, second)
			fs := vfs.NewMem()
			src, appended := fillSource(t, fs, 60)
			durable := src.LogEndOffset()
			c := &crasher{fs: fs, at: first, opts: vfs.CrashOptions{TornWrites: true, Seed: uint64(first)}}
			fs.SetFault(c.fault)
			if err := moveScript(src, appended, 100, &durable); err == nil || !c.crashed {
				t.Fatalf("%s: the first move did not crash: %v", label, err)
			}
			fs.SetFault(nil)
			l, mv, ok := recoverMove(t, fs, appended, durable, label)
			if !ok {
				t.Fatalf("%s: no future left to resume", label)
			}
			changeCurrent(t, l, appended, &durable, true, label)
			end, err := l.Sync()
			if err != nil {
				t.Fatal(err)
			}
			durable = end
			c = &crasher{fs: fs, at: second, opts: vfs.CrashOptions{TornWrites: true, Seed: uint64(second)}}
			fs.SetFault(c.fault)
			err = resumeAndMove(fs, l, mv)
			fs.SetFault(nil)
			if !c.crashed {
				if err != nil {
					t.Fatalf("%s: resumed move: %v", label, err)
				}
				checkBatches(t, l, appended, durable, label)
				l.Close()
				runs += second
				break
			}
			l2, mv2, ok := recoverMove(t, fs, appended, durable, label+", recovered")
			if ok {
				fut, _, _ := resumeMove(t, fs, l2, mv2, label)
				finishMove(t, l2, fut, appended, label)
			}
			l2.Close()
		}
	}
	t.Logf("%d crash points in resumed moves", runs)
}

// resumeAndMove resumes mv into its future and finishes the move, without
// failing the test: a crash stops it.
func resumeAndMove(fs vfs.FS, l *Log, mv ResumedMove) error {
	fut, err := Open(fs, mv.Future, moveConfig(), quietOptions())
	if err != nil {
		return err
	}
	if _, err := l.ResumeFuture(fut); err != nil {
		return err
	}
	return moveScriptFrom(l, fut)
}
