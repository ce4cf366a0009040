package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// validSegment returns the bytes of a segment holding n small batches with
// offsets from 0.
func validSegment(n int) []byte {
	var out []byte
	next := int64(0)
	for i := range n {
		b := makeBatch(1+i%3, 20+i, int64(i), byte(i))
		batch.SetBaseOffset(b, next)
		h, _ := batch.ParseHeader(b)
		next = h.LastOffset() + 1
		out = append(out, b...)
	}
	return out
}

// FuzzRecovery opens a log whose only segment holds arbitrary bytes. Open
// must not panic, and a log it opens must be consistent: contiguous offsets,
// every batch readable or reported corrupt (never bad bytes), and appends
// accepted.
func FuzzRecovery(f *testing.F) {
	seg := validSegment(5)
	f.Add(false, seg)
	f.Add(true, seg)
	f.Add(false, seg[:len(seg)-7])
	f.Add(false, append(bytes.Clone(seg), make([]byte, 100)...))
	f.Fuzz(func(t *testing.T, clean bool, data []byte) {
		fs := vfs.NewMem()
		fs.MkdirAll("/p", 0o755)
		writeFile(t, fs, segmentFileName("/p", 0, logSuffix), data)
		if clean {
			writeFile(t, fs, "/p/"+cleanShutdownFile, nil)
		}
		l, err := Open(fs, "/p", smallConfig(), quietOptions())
		if err != nil {
			return // refusing is fine; panicking is not
		}
		defer l.Close()
		checkServes(t, l, !clean)
		epoch, _ := l.Epochs().Latest()
		if _, err := l.Append(makeBatch(1, 5, 0, 0), max(epoch, 0), 0); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

// checkServes reads the log from start to end: every batch returned is
// valid and contiguous; ErrCorrupt is acceptable unless mustBeClean.
func checkServes(t *testing.T, l *Log, mustBeClean bool) {
	next := l.LogStartOffset()
	for next < l.LogEndOffset() {
		data, err := l.Read(next, 1<<16, l.LogEndOffset(), true)
		if errors.Is(err, ErrCorrupt) && !mustBeClean {
			return
		}
		if err != nil {
			t.Fatalf("read at %d (log end %d): %v", next, l.LogEndOffset(), err)
		}
		if len(data) == 0 {
			t.Fatalf("nothing at %d below log end %d", next, l.LogEndOffset())
		}
		if err := batch.Split(data, func(b []byte) error {
			h, err := batch.Validate(b)
			if err != nil {
				return err
			}
			if h.BaseOffset > next || h.LastOffset() < next {
				t.Fatalf("batch [%d,%d] does not continue at %d", h.BaseOffset, h.LastOffset(), next)
			}
			next = h.LastOffset() + 1
			return nil
		}); err != nil {
			t.Fatalf("read returned a bad batch: %v", err)
		}
	}
}

func writeFile(t *testing.T, fs vfs.FS, path string, data []byte) {
	f, err := vfs.Create(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	f.Sync()
	f.Close()
}

// FuzzReadAfterCorruption flips bytes of a healthy log's segment files
// (including the index) and checks that reads return good batches or
// ErrCorrupt, before and after an unclean reopen.
func FuzzReadAfterCorruption(f *testing.F) {
	f.Add([]byte{0, 0, 0, 100, 1})
	f.Add([]byte{0, 0, 0, 20, 0x80, 0, 0, 1, 0, 0xff})
	f.Add([]byte{1, 0, 0, 3, 0x10})
	f.Fuzz(runCorruption)
}

func runCorruption(t *testing.T, damage []byte) {
	{
		fs := vfs.NewMem()
		l, err := Open(fs, "/p", smallConfig(), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			mustAppend(t, l, makeBatch(2, 90, int64(i), byte(i)), 0, 0)
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		// Each 5-byte record: file selector, big-endian uint24 position, xor.
		for ; len(damage) >= 5; damage = damage[5:] {
			suffix := []string{logSuffix, indexSuffix, timeIndexSuffix}[int(damage[0])%3]
			pos := int64(binary.BigEndian.Uint32(append([]byte{0}, damage[1:4]...)))
			base := l.segments[int(damage[0])%len(l.segments)].base
			fs.Corrupt(segmentFileName("/p", base, suffix), pos, damage[4])
		}
		checkServes(t, l, false)
		fs.Crash(vfs.CrashOptions{})
		l2, err := Open(fs, "/p", smallConfig(), quietOptions())
		if err != nil {
			return
		}
		defer l2.Close()
		checkServes(t, l2, false)
	}
}
