package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skein-log/skein/internal/vfs"
)

// The leader-epoch checkpoint uses Kafka's text format:
//
//	0            version
//	2            number of entries
//	0 0          epoch startOffset
//	3 1200
func encodeEpochCheckpoint(entries []EpochEntry) []byte {
	out := fmt.Appendf(nil, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		out = fmt.Appendf(out, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return out
}

func parseEpochCheckpoint(lines []string) ([]EpochEntry, error) {
	if len(lines) == 0 {
		return nil, fmt.Errorf("missing entry count")
	}
	count, err := strconv.Atoi(lines[0])
	if err != nil || count < 0 || count > maxEpochEntries {
		return nil, fmt.Errorf("bad entry count %q", lines[0])
	}
	if len(lines)-1 != count {
		return nil, fmt.Errorf("entry count %d but %d entry lines", count, len(lines)-1)
	}
	entries := make([]EpochEntry, 0, count)
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("bad entry line %q", line)
		}
		epoch, err1 := strconv.ParseInt(fields[0], 10, 32)
		start, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad entry line %q", line)
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	if err := checkEpochEntries(entries); err != nil {
		return nil, err
	}
	return entries, nil
}

// loadEpochCache reads the partition's leader-epoch checkpoint and returns a
// cache that rewrites it (atomically) on every change. A missing checkpoint
// is an empty cache. A damaged one is logged and replaced by an empty cache,
// as recovery re-derives entries from the batches it re-validates; failing
// the whole partition over it would be worse.
func (l *Log) loadEpochCache() (*EpochCache, error) {
	// The directory is fixed here, not read from l: a moved log's cache
	// takes over the new directory's persist (EpochCache.takeOver).
	dir, fs := l.dir, l.fs
	path := filepath.Join(dir, epochCheckpointFile)
	persist := func(entries []EpochEntry) error {
		if err := vfs.WriteFileAtomic(fs, dir, path, encodeEpochCheckpoint(entries)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	lines, found, err := readCheckpointLines(l.fs, path)
	var entries []EpochEntry
	if err == nil && found {
		entries, err = parseEpochCheckpoint(lines)
	}
	if err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable; starting with an empty cache", "path", path, "err", err)
		l.forceFullRecovery = true
		entries = nil
	}
	return NewEpochCache(entries, persist)
}
