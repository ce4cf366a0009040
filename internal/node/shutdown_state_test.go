package node

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

func TestPreviousCleanEpoch(t *testing.T) {
	tests := []struct {
		name string
		prev shutdownState
		ok   bool
		boot string
		want int64
	}{
		{"no state (new or replaced dir)", shutdownState{}, false, "b1", -1},
		{"clean shutdown", shutdownState{Epoch: 7, BootID: "b0", Clean: true}, true, "b1", 7},
		{"crash in the same boot keeps the page cache", shutdownState{Epoch: 7, BootID: "b1"}, true, "b1", 7},
		{"crash across a reboot (power loss)", shutdownState{Epoch: 7, BootID: "b0"}, true, "b1", -1},
		{"boot unknown", shutdownState{Epoch: 7}, true, "", -1},
		{"started after an unclean stop, crashed before registering", shutdownState{Epoch: -1, BootID: "b1"}, true, "b1", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := previousCleanEpoch(tc.prev, tc.ok, tc.boot); got != tc.want {
				t.Fatalf("previousCleanEpoch = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestShutdownStateAcrossLogDirs: the state round-trips, and log dirs that
// disagree (one replaced, or lacking the file) vouch for nothing.
func TestShutdownStateAcrossLogDirs(t *testing.T) {
	fs := vfs.NewMem()
	b := twoDirBroker(t, fs)
	if _, ok, err := b.readShutdownState(); err != nil || ok {
		t.Fatalf("empty dirs: ok %v err %v", ok, err)
	}
	want := shutdownState{Epoch: 12, BootID: "boot", Clean: true}
	if err := b.writeShutdownState(want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.readShutdownState(); err != nil || !ok || got != want {
		t.Fatalf("read %+v ok %v err %v, want %+v", got, ok, err, want)
	}
	other := shutdownState{Epoch: 11, BootID: "boot", Clean: true}
	if err := vfs.WriteFileAtomic(fs, "/b", filepath.Join("/b", shutdownStateFile), other.encode()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.readShutdownState(); err != nil || ok {
		t.Fatalf("disagreeing dirs: ok %v err %v", ok, err)
	}
	if err := fs.Remove(filepath.Join("/b", shutdownStateFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.readShutdownState(); err != nil || ok {
		t.Fatalf("one dir without state: ok %v err %v", ok, err)
	}
}

// TestLogDirIDs: a log dir keeps its directory id across restarts and an
// empty (replaced) one gets a new id.
func TestLogDirIDs(t *testing.T) {
	fs := vfs.NewMem()
	b := twoDirBroker(t, fs)
	if _, err := b.loadOrCreateMetaProperties(); err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(b.logDirIDs)
	if len(first) != 2 || first[0].IsZero() || first[0] == first[1] {
		t.Fatalf("directory ids %v", first)
	}
	if _, err := b.loadOrCreateMetaProperties(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.logDirIDs, first) {
		t.Fatalf("ids changed across a restart: %v, then %v", first, b.logDirIDs)
	}
	if err := fs.RemoveAll("/b"); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := b.loadOrCreateMetaProperties(); err != nil {
		t.Fatal(err)
	}
	if b.logDirIDs[0] != first[0] || b.logDirIDs[1] == first[1] || b.logDirIDs[1].IsZero() {
		t.Fatalf("after replacing /b: ids %v, before %v", b.logDirIDs, first)
	}
}

// twoDirBroker is a unit broker with the log dirs /a and /b.
func twoDirBroker(t *testing.T, fs *vfs.Mem) *Broker {
	t.Helper()
	b := newUnitBroker(t, fs)
	b.cfg.LogDirs = []string{"/a", "/b"}
	for _, d := range b.cfg.LogDirs {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}
