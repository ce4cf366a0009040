package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/vfs"
)

// File names inside a partition directory.
const (
	logSuffix           = ".log"
	indexSuffix         = ".index"
	timeIndexSuffix     = ".timeindex"
	cleanShutdownFile   = ".clean_shutdown"
	recoveryPointFile   = "recovery-point"
	logStartOffsetFile  = "log-start-offset"
	epochCheckpointFile = "leader-epoch-checkpoint"
	tmpSuffix           = ".tmp"  // vfs.WriteFileAtomic leftovers
	checkpointVersion   = 0       // first line of every checkpoint file
	maxCheckpointBytes  = 1 << 20 // no checkpoint we write is near this
	baseOffsetDigits    = 20      // Kafka's segment name width
	maxEpochEntries     = 1 << 16 // a checkpoint claiming more is corrupt
	filePerm            = os.FileMode(0o644)
	dirPerm             = os.FileMode(0o755)
)

// segmentFileName is Kafka's name for a segment file: the base offset,
// zero-padded to 20 digits, and a suffix.
func segmentFileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset of a ".log" file name.
func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(digits) != baseOffsetDigits {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// writeOffsetCheckpoint durably writes a small "version\noffset\n" file.
func writeOffsetCheckpoint(fs vfs.FS, dir, name string, offset int64) error {
	data := fmt.Appendf(nil, "%d\n%d\n", checkpointVersion, offset)
	if err := vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, name), data); err != nil {
		return fmt.Errorf("write %s checkpoint in %s: %w", name, dir, err)
	}
	return nil
}

// readOffsetCheckpoint reads a file written by writeOffsetCheckpoint. A
// missing file gives found=false; an unreadable one is an error the caller
// may choose to survive (by falling back to a safe default).
func readOffsetCheckpoint(fs vfs.FS, dir, name string) (offset int64, found bool, err error) {
	lines, found, err := readCheckpointLines(fs, filepath.Join(dir, name))
	if err != nil || !found {
		return 0, found, err
	}
	if len(lines) != 1 {
		return 0, true, fmt.Errorf("checkpoint %s in %s: want 1 value, have %d lines", name, dir, len(lines))
	}
	offset, err = strconv.ParseInt(lines[0], 10, 64)
	if err != nil || offset < 0 {
		return 0, true, fmt.Errorf("checkpoint %s in %s: bad offset %q", name, dir, lines[0])
	}
	return offset, true, nil
}

// readCheckpointLines reads a checkpoint file, checks its version line and
// returns the remaining non-empty lines.
func readCheckpointLines(fs vfs.FS, path string) (lines []string, found bool, err error) {
	st, err := fs.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Size > maxCheckpointBytes {
		return nil, true, fmt.Errorf("checkpoint %s: %d bytes is too large", path, st.Size)
	}
	data, err := vfs.ReadFile(fs, path)
	if err != nil {
		return nil, true, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 || lines[0] != strconv.Itoa(checkpointVersion) {
		return nil, true, fmt.Errorf("checkpoint %s: missing or unknown version line", path)
	}
	return lines[1:], true, nil
}

// removeDurably removes a file (a missing file is fine) and syncs the
// directory so the removal survives a crash.
func removeDurably(fs vfs.FS, dir, path string) error {
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
