package node

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

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
// which the next produce notices. Fetches, metadata, group coordination
// (its small writes keep the floor's headroom) and the quorum are
// untouched. The floor keeps the disk from filling, so a write never meets
// ENOSPC, which still takes the directory offline (diskfail.go) as any
// failed write does.
//
// The free space is read with statfs, but not at every write: that was one
// syscall per produce and per follower append, on the lone-record path of
// every broker. A directory's reading is kept (dirSpace) and read again
//   - at every write while the directory is below its floor, so that freed
//     space is noticed by the next produce;
//   - once this broker's own writes since the reading reach half the
//     headroom it showed above the floor, so the broker never writes past
//     the floor unseen (the check halves the step as the headroom shrinks);
//   - after spaceRefreshInterval, for space that others use up;
//   - at every metrics scrape, which reads it anyway.
// Space used up by another process between two readings can still reach
// ENOSPC, which is refused and undone like any full-disk write.

// spaceRefreshInterval bounds how old a directory's free-space reading
// may be when a write is checked against it: others' writes to the same
// filesystem are seen within this long.
const spaceRefreshInterval = time.Second

// errBelowFloor marks the refusal of a write to a log directory below its
// free-space floor.
var errBelowFloor = errors.New("below the free-space floor")

// dirSpace is the last free-space reading of one log directory.
type dirSpace struct {
	mu      sync.Mutex
	read    bool // s holds a reading
	s       vfs.Space
	below   bool
	at      time.Time
	written int64 // bytes this broker wrote to the directory since
}

// checkFreeSpace returns the error a write of n bytes to a partition in
// log directory dir gets while the directory is below its floor: a
// produce, or a follower's append (the follower falls behind and leaves
// the ISR rather than fill the disk the metadata log needs; it catches up
// once space returns).
func (b *Broker) checkFreeSpace(dir string, n int64) error {
	if b.cfg.LogDirMinFreeBytes <= 0 && b.cfg.LogDirMinFreePercent <= 0 {
		return nil // no floor: nothing a reading could refuse
	}
	d := b.dirSpace(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if !d.read || d.below || now.Sub(d.at) >= spaceRefreshInterval ||
		d.written+n >= (d.s.Free-b.freeSpaceFloor(d.s))/2 {
		s, err := b.fs.Space(dir)
		if err != nil {
			// A statfs that fails says nothing about the writes: they decide.
			b.log.Warn("cannot read the free space of a log directory", "dir", dir, "err", err)
			return nil
		}
		b.noteSpaceLocked(d, dir, s, now)
	}
	if !d.below {
		d.written += n
		return nil
	}
	return fmt.Errorf("%w: %w: log directory %s has %d bytes free, below its floor of %d (log.dir.min.free.bytes / log.dir.min.free.percent); writes resume once space is freed",
		kerr.KafkaStorageError, errBelowFloor, dir, d.s.Free, b.freeSpaceFloor(d.s))
}

// dirSpace is dir's reading, made on first use.
func (b *Broker) dirSpace(dir string) *dirSpace {
	if d, ok := b.spaceReadings.Load(dir); ok {
		return d.(*dirSpace)
	}
	d, _ := b.spaceReadings.LoadOrStore(dir, &dirSpace{})
	return d.(*dirSpace)
}

// noteSpaceLocked keeps a new reading of dir (d.mu held), logging a
// crossing of the floor once each way.
func (b *Broker) noteSpaceLocked(d *dirSpace, dir string, s vfs.Space, now time.Time) {
	below := s.Free < b.freeSpaceFloor(s)
	if below != d.below && (below || d.read) {
		if below {
			b.log.Error("log directory below its free-space floor: refusing writes to its partitions until space is freed",
				"dir", dir, "free_bytes", s.Free, "floor_bytes", b.freeSpaceFloor(s))
		} else {
			b.log.Info("log directory back above its free-space floor: writes resume", "dir", dir, "free_bytes", s.Free)
		}
	}
	d.read, d.s, d.below, d.at, d.written = true, s, below, now, 0
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

// registerLogDirSpace exports each log directory's free bytes and whether
// it is below its floor, read at scrape time.
func (b *Broker) registerLogDirSpace() error {
	err := b.metrics.RegisterLogDirSpace(b.cfg.LogDirs, func(dir string) (free float64, below bool, ok bool) {
		s, below, err := b.logDirSpace(dir)
		if err == nil {
			// A fresh reading: the writes' checks use it too.
			d := b.dirSpace(dir)
			d.mu.Lock()
			b.noteSpaceLocked(d, dir, s, time.Now())
			d.mu.Unlock()
		}
		return float64(s.Free), below, err == nil
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}
