package node

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
)

// describeLogDirs answers DescribeLogDirs: every configured log directory,
// with the partition replicas open in it.
func (b *Broker) describeLogDirs() []api.LogDirDescription {
	byDir := map[string][]api.LogDirPartition{}
	for _, p := range b.partitionList() {
		dir := filepath.Clean(filepath.Dir(p.log.Dir()))
		lag := max(p.highWatermark.Load()-p.log.LogEndOffset(), 0)
		byDir[dir] = append(byDir[dir], api.LogDirPartition{Topic: p.topic, Partition: p.index, Size: p.log.Size(), OffsetLag: lag})
	}
	// Future replicas (a move under way): their lag is how far the copy
	// is behind the current log's end, as Kafka reports it.
	for _, mv := range b.logMoves.list() {
		dir := filepath.Clean(mv.root)
		lag := max(mv.p.log.LogEndOffset()-mv.fut.LogEndOffset(), 0)
		byDir[dir] = append(byDir[dir], api.LogDirPartition{Topic: mv.p.topic, Partition: mv.p.index, Size: mv.fut.Size(), OffsetLag: lag, IsFuture: true})
	}
	var offline string
	if d := b.offlineDir.Load(); d != nil {
		offline = filepath.Clean(*d)
	}
	out := make([]api.LogDirDescription, 0, len(b.cfg.LogDirs))
	for _, dir := range b.cfg.LogDirs {
		dir = filepath.Clean(dir)
		d := api.LogDirDescription{Dir: dir, TotalBytes: -1, UsableBytes: -1, Partitions: byDir[dir]}
		if abs, err := filepath.Abs(dir); err == nil {
			d.Dir = abs // Kafka names directories by absolute path
		}
		if dir == offline {
			d.Err = fmt.Errorf("%w: log directory %s is offline", kerr.KafkaStorageError, dir)
			d.Partitions = nil
		} else if sp, err := b.fs.Space(dir); err == nil {
			// statfs(2) through the filesystem seam, as the free-space
			// floor reads it: the volume's size and what this process
			// may still write.
			d.TotalBytes, d.UsableBytes = sp.Total, sp.Free
		}
		slices.SortFunc(d.Partitions, func(a, b api.LogDirPartition) int {
			if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
				return c
			}
			return cmp.Compare(btoi(a.IsFuture), btoi(b.IsFuture))
		})
		out = append(out, d)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
