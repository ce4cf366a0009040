package node

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/vfs"
)

// The broker's own filesystem syncs through a ring unless
// log.fsync.io.uring.enable is off; a filesystem handed in is left as it
// is. The choice is logged once.
func TestFsyncRingChoice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		enable string
		fs     vfs.FS
		ring   bool
		line   string
	}{
		{"default", "true", nil, true, "fdatasync through io_uring"},
		{"off", "false", nil, false, "fdatasync called in place"},
		{"given fs", "true", vfs.NewMem(), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.NewBroker(map[string]string{
				"node.id":                   "1",
				"process.roles":             "broker,controller",
				"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
				"controller.quorum.voters":  "1@127.0.0.1:1",
				"log.dirs":                  t.TempDir(),
				"cluster.id":                "unit-test",
				"log.fsync.io.uring.enable": tc.enable,
			})
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			b := New(cfg, Options{FS: tc.fs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			b.openFsyncRing()
			defer b.closeFsyncRing()
			if tc.ring && b.fsyncRing == nil && !strings.Contains(logs.String(), "io_uring unavailable") {
				t.Fatalf("no ring and no reason logged: %s", logs.String())
			}
			if !tc.ring && b.fsyncRing != nil {
				t.Fatal("a ring where none was wanted")
			}
			if b.fsyncRing != nil {
				if os, ok := b.fs.(vfs.OS); !ok || os.Ring != b.fsyncRing {
					t.Fatalf("the broker's filesystem %#v does not use its ring", b.fs)
				}
				// A file of the broker's filesystem syncs through it.
				f, err := vfs.Create(b.fs, filepath.Join(cfg.LogDirs[0], "f"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Write([]byte("x")); err != nil {
					t.Fatal(err)
				}
				if err := vfs.Datasync(f); err != nil {
					t.Fatal(err)
				}
			}
			if tc.fs != nil && b.fs != tc.fs {
				t.Fatal("the filesystem handed in was replaced")
			}
			if tc.line != "" && b.fsyncRing != nil == tc.ring && !strings.Contains(logs.String(), tc.line) {
				t.Fatalf("log lacks %q: %s", tc.line, logs.String())
			}
		})
	}
}
