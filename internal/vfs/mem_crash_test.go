package vfs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

// TestMemCrashDurability pins the durability model: after Crash, each path
// holds exactly what was synced (file content by File.Sync, names by SyncDir
// on the parent), nothing more.
func TestMemCrashDurability(t *testing.T) {
	tests := []struct {
		name   string
		before func(t *testing.T, m *vfs.Mem)
		want   map[string]string // path -> content after the crash, or absent
	}{
		{
			name: "synced file in synced dir survives",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "unsynced content is lost but the synced name stays",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", false)
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/f": ""},
		},
		{
			name: "synced file disappears when its dir was never synced",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
			},
			want: map[string]string{"/d/f": absent},
		},
		{
			name: "writes after the last sync are lost",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "abc", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				_, err := f.WriteAt([]byte("XYZ"), 1)
				must(t, err)
				must(t, f.Close())
			},
			want: map[string]string{"/d/f": "abc"},
		},
		{
			name: "repeated syncs keep the latest content",
			before: func(t *testing.T, m *vfs.Mem) {
				f, err := vfs.Create(m, "/d/f")
				must(t, err)
				must(t, m.SyncDir("/d"))
				for _, step := range []struct {
					data string
					off  int64
				}{{"aaaa", 0}, {"bb", 4}, {"C", 1}, {"dd", 8}} {
					_, err := f.WriteAt([]byte(step.data), step.off)
					must(t, err)
					must(t, f.Sync())
				}
				_, err = f.Write([]byte("lost"))
				must(t, err)
			},
			want: map[string]string{"/d/f": "aCaabb\x00\x00dd"},
		},
		{
			name: "synced truncation survives",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "abcdef", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				must(t, f.Truncate(2))
				must(t, f.Sync())
				must(t, f.Close())
			},
			want: map[string]string{"/d/f": "ab"},
		},
		{
			name: "unsynced truncation is undone",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "abcdef", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				must(t, f.Truncate(2))
				_, err := f.WriteAt([]byte("zz"), 2)
				must(t, err)
				must(t, f.Close())
			},
			want: map[string]string{"/d/f": "abcdef"},
		},
		{
			name: "truncate then regrow then sync",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "abcdef", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				must(t, f.Truncate(1))
				_, err := f.WriteAt([]byte("XY"), 1)
				must(t, err)
				must(t, f.Sync())
			},
			want: map[string]string{"/d/f": "aXY"},
		},
		{
			name: "unsynced O_TRUNC is undone",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "abc", true)
				must(t, m.SyncDir("/d"))
				create(t, m, "/d/f", "new", false)
			},
			want: map[string]string{"/d/f": "abc"},
		},
		{
			name: "rename made durable by SyncDir",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/a", "A", true)
				must(t, m.SyncDir("/d"))
				must(t, m.Rename("/d/a", "/d/b"))
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/a": absent, "/d/b": "A"},
		},
		{
			name: "unsynced rename is undone",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/a", "A", true)
				create(t, m, "/d/b", "B", true)
				must(t, m.SyncDir("/d"))
				must(t, m.Rename("/d/a", "/d/b"))
			},
			want: map[string]string{"/d/a": "A", "/d/b": "B"},
		},
		{
			name: "cross-directory rename with only the target synced leaves two names",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/a", "A", true)
				must(t, m.MkdirAll("/e", 0o755))
				must(t, m.SyncDir("/"))
				must(t, m.SyncDir("/d"))
				must(t, m.Rename("/d/a", "/e/a"))
				must(t, m.SyncDir("/e"))
			},
			want: map[string]string{"/d/a": "A", "/e/a": "A"},
		},
		{
			name: "cross-directory rename with both dirs synced",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/a", "A", true)
				must(t, m.MkdirAll("/e", 0o755))
				must(t, m.SyncDir("/"))
				must(t, m.SyncDir("/d"))
				must(t, m.Rename("/d/a", "/e/a"))
				must(t, m.SyncDir("/e"))
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/a": absent, "/e/a": "A"},
		},
		{
			name: "unsynced remove is undone",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
				must(t, m.SyncDir("/d"))
				must(t, m.Remove("/d/f"))
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "synced remove is durable",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
				must(t, m.SyncDir("/d"))
				must(t, m.Remove("/d/f"))
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/f": absent},
		},
		{
			name: "sync through a handle of a removed file does not resurrect it",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				must(t, m.Remove("/d/f"))
				must(t, m.SyncDir("/d"))
				_, err := f.Write([]byte("X"))
				must(t, err)
				must(t, f.Sync())
			},
			want: map[string]string{"/d/f": absent},
		},
		{
			name: "removed-but-unsynced file comes back with later synced writes",
			before: func(t *testing.T, m *vfs.Mem) {
				create(t, m, "/d/f", "data", true)
				must(t, m.SyncDir("/d"))
				f := openRW(t, m, "/d/f")
				must(t, m.Remove("/d/f"))
				_, err := f.Write([]byte("X"))
				must(t, err)
				must(t, f.Sync())
			},
			want: map[string]string{"/d/f": "Xata"},
		},
		{
			name: "unsynced RemoveAll brings the durable subtree back",
			before: func(t *testing.T, m *vfs.Mem) {
				must(t, m.MkdirAll("/d/x", 0o755))
				create(t, m, "/d/x/f", "F", true)
				create(t, m, "/d/x/g", "G", false) // never named durably
				must(t, m.SyncDir("/d/x"))
				must(t, m.Remove("/d/x/g"))
				must(t, m.SyncDir("/d/x"))
				must(t, m.SyncDir("/d"))
				must(t, m.RemoveAll("/d/x"))
			},
			want: map[string]string{"/d/x/f": "F", "/d/x/g": absent},
		},
		{
			name: "synced RemoveAll is durable",
			before: func(t *testing.T, m *vfs.Mem) {
				must(t, m.MkdirAll("/d/x", 0o755))
				create(t, m, "/d/x/f", "F", true)
				must(t, m.SyncDir("/d/x"))
				must(t, m.SyncDir("/d"))
				must(t, m.RemoveAll("/d/x"))
				must(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/x/f": absent},
		},
		{
			name: "nested dir needs every ancestor synced",
			before: func(t *testing.T, m *vfs.Mem) {
				must(t, m.MkdirAll("/a/b/c", 0o755))
				create(t, m, "/a/b/c/f", "F", true)
				must(t, m.SyncDir("/a/b/c"))
				must(t, m.SyncDir("/a/b"))
				must(t, m.SyncDir("/")) // /a itself never synced
			},
			want: map[string]string{"/a/b/c/f": absent},
		},
		{
			name: "write file atomic keeps old or new, never a mix",
			before: func(t *testing.T, m *vfs.Mem) {
				must(t, vfs.WriteFileAtomic(m, "/d", "/d/cp", []byte("one")))
				f, err := vfs.Create(m, "/d/cp.tmp") // a second update, cut short
				must(t, err)
				_, err = f.Write([]byte("two"))
				must(t, err)
			},
			want: map[string]string{"/d/cp": "one", "/d/cp.tmp": absent},
		},
		{
			name: "syncfs makes the whole tree durable when nothing is mounted",
			before: func(t *testing.T, m *vfs.Mem) {
				must(t, m.MkdirAll("/d/x", 0o755))
				create(t, m, "/d/x/f", "x", false)
				create(t, m, "/d/y", "y", false)
				must(t, m.SyncFS("/d/x"))
			},
			want: map[string]string{"/d/x/f": "x", "/d/y": "y"},
		},
		{
			name: "syncfs syncs only the filesystem mounted where it is asked",
			before: func(t *testing.T, m *vfs.Mem) {
				m.Mount("/d/a")
				m.Mount("/d/b")
				must(t, m.MkdirAll("/d/a/p", 0o755))
				must(t, m.MkdirAll("/d/b/q", 0o755))
				must(t, m.SyncDir("/d"))
				create(t, m, "/d/a/p/f", "a", false)
				create(t, m, "/d/b/q/g", "b", false)
				create(t, m, "/d/top", "t", false)
				must(t, m.SyncFS("/d/a/p"))
			},
			want: map[string]string{"/d/a/p/f": "a", "/d/b/q": absent, "/d/top": absent},
		},
		{
			name: "syncfs outside a mount leaves the mounted filesystem alone",
			before: func(t *testing.T, m *vfs.Mem) {
				m.Mount("/d/a")
				must(t, m.MkdirAll("/d/a/p", 0o755))
				create(t, m, "/d/top", "t", false)
				must(t, m.SyncFS("/d"))
			},
			want: map[string]string{"/d/top": "t", "/d/a/p": absent},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := vfs.NewMem()
			must(t, m.MkdirAll("/d", 0o755))
			must(t, m.SyncDir("/"))
			tc.before(t, m)
			m.Crash(vfs.CrashOptions{})
			for path, want := range tc.want {
				if got := content(t, m, path); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			// After a crash, current and durable state agree: a second
			// crash changes nothing.
			m.Crash(vfs.CrashOptions{})
			for path, want := range tc.want {
				if got := content(t, m, path); got != want {
					t.Errorf("after second crash %s = %q, want %q", path, got, want)
				}
			}
		})
	}
}

func TestMemCrashInvalidatesHandles(t *testing.T) {
	m := vfs.NewMem()
	create(t, m, "/f", "abc", true)
	must(t, m.SyncDir("/"))
	f := openRW(t, m, "/f")
	m.Crash(vfs.CrashOptions{})

	_, writeErr := f.Write([]byte("x"))
	_, writeAtErr := f.WriteAt([]byte("x"), 0)
	_, readErr := f.ReadAt(make([]byte, 1), 0)
	_, sizeErr := f.Size()
	errs := map[string]error{
		"write": writeErr, "writeat": writeAtErr, "readat": readErr, "size": sizeErr,
		"sync": f.Sync(), "truncate": f.Truncate(0), "close": f.Close(),
	}
	for op, err := range errs {
		if !errors.Is(err, vfs.ErrCrashed) {
			t.Errorf("%s after crash: %v, want ErrCrashed", op, err)
		}
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second close: %v, want ErrClosed", err)
	}
	if got := content(t, m, "/f"); got != "abc" {
		t.Errorf("content = %q; a dead handle must not change the file", got)
	}
	g := openRW(t, m, "/f")
	_, err := g.Write([]byte("X"))
	must(t, err)
	must(t, g.Close())
	if got := content(t, m, "/f"); got != "Xbc" {
		t.Errorf("content through new handle = %q", got)
	}
}

// TestMemCrashDirectoryCycle builds durable entries that form a cycle (only
// possible with half-synced directory renames); Crash must still terminate
// and give each directory one parent.
func TestMemCrashDirectoryCycle(t *testing.T) {
	m := vfs.NewMem()
	must(t, m.MkdirAll("/A", 0o755))
	must(t, m.MkdirAll("/B", 0o755))
	must(t, m.SyncDir("/"))
	must(t, m.Rename("/B", "/A/B"))
	must(t, m.SyncDir("/A")) // durable A = {B}
	must(t, m.Rename("/A/B", "/B"))
	must(t, m.Rename("/A", "/B/A"))
	must(t, m.SyncDir("/B")) // durable B = {A}; durable root = {A, B}

	m.Crash(vfs.CrashOptions{})
	// Depth-first in sorted order reaches B first below A, so B keeps that
	// parent and A's entry below B and B's entry in the root are dropped.
	for dir, want := range map[string][]string{"/": {"A"}, "/A": {"B"}, "/A/B": {}} {
		if got := names(t, m, dir); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", dir, got, want)
		}
	}
	m.Crash(vfs.CrashOptions{}) // the repaired durable state is stable
	if got := names(t, m, "/A"); !slices.Equal(got, []string{"B"}) {
		t.Errorf("after second crash /A = %v", got)
	}
}

func TestMemCrashTornWrites(t *testing.T) {
	const durable, unsynced = "durable|", "0123456789abcdefghij"
	setup := func(t *testing.T) *vfs.Mem {
		m := vfs.NewMem()
		for i := range 8 {
			name := fmt.Sprintf("/f%d", i)
			create(t, m, name, durable, true)
			f := openRW(t, m, name)
			_, err := f.WriteAt([]byte(unsynced), int64(len(durable)))
			must(t, err)
		}
		must(t, m.SyncDir("/"))
		return m
	}
	crash := func(t *testing.T, seed uint64) []string {
		m := setup(t)
		m.Crash(vfs.CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(seed, 0))})
		var out []string
		for i := range 8 {
			out = append(out, content(t, m, fmt.Sprintf("/f%d", i)))
		}
		return out
	}

	lengths := map[int]bool{}
	for seed := range uint64(20) {
		got := crash(t, seed)
		for _, c := range got {
			if len(c) < len(durable) || c != (durable + unsynced)[:len(c)] {
				t.Fatalf("seed %d: %q is not a prefix of the written bytes", seed, c)
			}
			lengths[len(c)-len(durable)] = true
		}
		if again := crash(t, seed); !slices.Equal(got, again) {
			t.Fatalf("seed %d not deterministic: %q then %q", seed, got, again)
		}
	}
	// 160 draws from 21 lengths: all but a handful must appear, including
	// the extremes often enough that both show up.
	if len(lengths) < 15 || !lengths[0] || !lengths[len(unsynced)] {
		t.Errorf("torn lengths seen %v: not spread over [0,%d]", lengths, len(unsynced))
	}

	// Seed without Rand is deterministic too.
	seeded := func() string {
		m := setup(t)
		m.Crash(vfs.CrashOptions{TornWrites: true, Seed: 7})
		return content(t, m, "/f0") + content(t, m, "/f1")
	}
	if a, b := seeded(), seeded(); a != b {
		t.Errorf("Seed not deterministic: %q vs %q", a, b)
	}

	// Without TornWrites the unsynced tail is always lost.
	m := setup(t)
	m.Crash(vfs.CrashOptions{})
	if got := content(t, m, "/f3"); got != durable {
		t.Errorf("without TornWrites: %q", got)
	}
}

// TestMemTornWritesKeepOverwritesLost: tearing only extends past the durable
// length; bytes overwritten inside it stay as they were synced.
func TestMemTornWritesKeepOverwritesLost(t *testing.T) {
	m := vfs.NewMem()
	create(t, m, "/f", "abcd", true)
	must(t, m.SyncDir("/"))
	f := openRW(t, m, "/f")
	_, err := f.WriteAt([]byte("XXXXXXXX"), 0)
	must(t, err)
	m.Crash(vfs.CrashOptions{TornWrites: true, Seed: 1})
	got := content(t, m, "/f")
	if len(got) < 4 || got[:4] != "abcd" || got != ("abcd" + "XXXX")[:len(got)] {
		t.Errorf("content = %q", got)
	}
}

func TestMemCorruptSurvivesCrash(t *testing.T) {
	m := vfs.NewMem()
	create(t, m, "/f", "abcd", true)
	must(t, m.SyncDir("/"))
	must(t, m.Corrupt("/f", 1, 0x20))
	if got := content(t, m, "/f"); got != "aBcd" {
		t.Errorf("before crash = %q", got)
	}
	m.Crash(vfs.CrashOptions{})
	if got := content(t, m, "/f"); got != "aBcd" {
		t.Errorf("after crash = %q", got)
	}
	for _, off := range []int64{-1, 4} {
		if err := m.Corrupt("/f", off, 1); err == nil {
			t.Errorf("Corrupt at %d succeeded", off)
		}
	}
	if err := m.Corrupt("/nope", 0, 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Corrupt missing: %v", err)
	}
}

func TestMemPaths(t *testing.T) {
	m := vfs.NewMem()
	create(t, m, "a", "x", false)
	for _, alias := range []string{"/a", "./a", "/x/../a", "//a", "../a"} {
		if got := content(t, m, alias); got != "x" {
			t.Errorf("%q = %q", alias, got)
		}
	}
	st, err := m.Stat("/")
	if err != nil || st.Name != "/" || !st.IsDir {
		t.Errorf("Stat(/) = %+v, %v", st, err)
	}
	for name, err := range map[string]error{
		"open root":      func() error { _, err := vfs.Create(m, "/"); return err }(),
		"remove root":    m.Remove("/"),
		"removeall root": m.RemoveAll("/"),
		"rename root":    m.Rename("/", "/b"),
		"open dir":       func() error { _, err := vfs.Open(m, "/"); return err }(),
		"create below a file": func() error {
			_, err := vfs.Create(m, "/a/b")
			return err
		}(),
	} {
		if err == nil {
			t.Errorf("%s succeeded", name)
		}
	}
}

func TestMemRejectsBadInput(t *testing.T) {
	m := vfs.NewMem()
	f, err := vfs.Create(m, "/f")
	must(t, err)
	const huge = int64(1) << 62
	for name, err := range map[string]error{
		"writeat negative": func() error { _, err := f.WriteAt([]byte("x"), -1); return err }(),
		"writeat huge":     func() error { _, err := f.WriteAt([]byte("x"), huge); return err }(),
		"writeat overflow": func() error { _, err := f.WriteAt([]byte("xy"), 1<<63-1); return err }(),
		"truncate huge":    f.Truncate(huge),
		"corrupt dir":      m.Corrupt("/", 0, 1),
		"syncdir file":     m.SyncDir("/f"),
		"rename dir onto file": func() error {
			must(t, m.MkdirAll("/d/x", 0o755))
			return m.Rename("/d", "/f")
		}(),
		"rename dir onto non-empty dir": func() error {
			must(t, m.MkdirAll("/e/y", 0o755))
			return m.Rename("/d", "/e")
		}(),
	} {
		if err == nil {
			t.Errorf("%s succeeded", name)
		}
	}
	if size, _ := f.Size(); size != 0 {
		t.Errorf("size = %d after rejected calls", size)
	}
	must(t, m.MkdirAll("/empty", 0o755))
	must(t, m.Rename("/d", "/empty")) // a directory may replace an empty one
	if got := names(t, m, "/empty"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("/empty = %v", got)
	}
}

// TestMemWriteFileAtomicUnderFaults fails each step of WriteFileAtomic in
// turn; after a crash the file holds the old or the new contents, whole.
func TestMemWriteFileAtomicUnderFaults(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpOpen, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			m := vfs.NewMem()
			must(t, vfs.WriteFileAtomic(m, "/", "/cp", []byte("old")))
			m.SetFault(func(got vfs.Op, _ string) error {
				if got == op {
					return errInjected
				}
				return nil
			})
			if err := vfs.WriteFileAtomic(m, "/", "/cp", []byte("new")); !errors.Is(err, errInjected) {
				t.Fatalf("err = %v", err)
			}
			m.SetFault(nil)
			m.Crash(vfs.CrashOptions{TornWrites: true, Seed: 3})
			if got := content(t, m, "/cp"); got != "old" && got != "new" {
				t.Errorf("/cp = %q", got)
			}
		})
	}
}
