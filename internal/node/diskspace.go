package node

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/vfs"
)

// A log directory low on space refuses produces and keeps serving.
//
// Kafka stops a broker whose last log directory fails, and a full disk
// fails it; Redpanda instead refuses writes while free space is below
// storage_min_free_bytes. We do the latter: below the floor
// (log.dir.min.free.bytes, or log.dir.min.free.percent of the filesystem,
// whichever is larger) a produce to a partition in that directory answers
// KAFKA_STORAGE_ERROR. Clients treat that code as retriable (franz-go,
// librdkafka and the Java client refresh metadata and retry until their
// delivery timeout), so producers resume by themselves once space returns,
// which the next produce notices: the check is one statfs per produce and
// partition, cheap next to the append, with no timer to arm. Fetches,
// metadata, group coordination (its small writes keep the floor's
// headroom) and the quorum are untouched. The floor keeps the disk from
// filling, so a write never meets ENOSPC, which still takes the directory
// offline (diskfail.go) as any failed write does.

// errBelowFloor marks the refusal of a write to a log directory below its
// free-space floor.
var errBelowFloor = errors.New("below the free-space floor")

// checkFreeSpace returns the error a write to a partition in log directory
// dir gets while the directory is below its floor: a produce, or a
// follower's append (the follower falls behind and leaves the ISR rather
// than fill the disk the metadata log needs; it catches up once space
// returns).
func (b *Broker) checkFreeSpace(dir string) error {
	s, below, err := b.logDirSpace(dir)
	if err != nil {
		// A statfs that fails says nothing about the writes: they decide.
		b.log.Warn("cannot read the free space of a log directory", "dir", dir, "err", err)
		return nil
	}
	floor := b.freeSpaceFloor(s)
	if was, _ := b.lowDirs.Swap(dir, below); was != below && (below || was != nil) {
		if below {
			b.log.Error("log directory below its free-space floor: refusing writes to its partitions until space is freed",
				"dir", dir, "free_bytes", s.Free, "floor_bytes", floor)
		} else {
			b.log.Info("log directory back above its free-space floor: writes resume", "dir", dir, "free_bytes", s.Free)
		}
	}
	if !below {
		return nil
	}
	return fmt.Errorf("%w: %w: log directory %s has %d bytes free, below its floor of %d (log.dir.min.free.bytes / log.dir.min.free.percent); writes resume once space is freed",
		kerr.KafkaStorageError, errBelowFloor, dir, s.Free, floor)
}

// logDirSpace reads a log directory's space and whether it is below the floor.
func (b *Broker) logDirSpace(dir string) (vfs.Space, bool, error) {
	s, err := b.fs.Space(dir)
	if err != nil {
		return s, false, err
	}
	return s, s.Free < b.freeSpaceFloor(s), nil
}

// freeSpaceFloor is the larger of the byte and percentage floors.
func (b *Broker) freeSpaceFloor(s vfs.Space) int64 {
	pct := int64(math.Ceil(float64(s.Total) * b.cfg.LogDirMinFreePercent / 100))
	return max(b.cfg.LogDirMinFreeBytes, pct)
}

// partitionLogDir is the log directory holding p.
func partitionLogDir(p *partition) string { return filepath.Dir(p.log.Dir()) }

// registerLogDirSpace exports each log directory's free bytes and whether
// it is below its floor, read at scrape time.
func (b *Broker) registerLogDirSpace() error {
	err := b.metrics.RegisterLogDirSpace(b.cfg.LogDirs, func(d string) (free float64, below bool, ok bool) {
		s, below, err := b.logDirSpace(d)
		return float64(s.Free), below, err == nil
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
