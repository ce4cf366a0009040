package storage

import (
	"os"
	"testing"

	"github.com/skein-log/skein/internal/vfs"
)

func TestParsePartitionDirName(t *testing.T) {
	cases := []struct {
		base   string
		topic  string
		index  int32
		future bool
		ok     bool
	}{
		{"t-0", "t", 0, false, true},
		{"my-topic-12", "my-topic", 12, false, true},
		{"my-topic-12.ab12-future", "my-topic", 12, true, true},
		{"t-0.x-delete", "", 0, false, false},
		{"__cluster_metadata-0", "__cluster_metadata", 0, false, true},
		{"nodash", "", 0, false, false},
		{"-3", "", 0, false, false},
		{"t-x", "", 0, false, false},
		{"t-0.-future", "", 0, false, false},
	}
	for _, c := range cases {
		topic, index, future, ok := ParsePartitionDirName(c.base)
		if topic != c.topic || index != c.index || future != c.future || ok != c.ok {
			t.Errorf("%s: %q %d %v %v, want %q %d %v %v", c.base, topic, index, future, ok, c.topic, c.index, c.future, c.ok)
		}
	}
}

// TestDeleteDirCrashSafe: after DeleteDir, a power loss never brings the
// log back under its name.
func TestDeleteDirCrashSafe(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("data/t-0", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "data", "data/t-0"} {
		if err := fs.SyncDir(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := DeleteDir(fs, "data/t-0", "x"); err != nil {
		t.Fatal(err)
	}
	fs.Crash(vfs.CrashOptions{})
	if _, err := fs.Stat("data/t-0"); !os.IsNotExist(err) {
		t.Fatalf("data/t-0 after a crash: %v", err)
	}
	if err := DeleteDir(fs, "data/t-0", "y"); err != nil {
		t.Fatalf("deleting what is gone: %v", err)
	}
}
