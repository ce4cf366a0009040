package balancer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// The intra-broker part of the balancer (Cruise Control's
// IntraBrokerDiskUsageDistributionGoal and IntraBrokerDiskCapacityGoal are
// the anchors): a broker with several log.dirs fills them unevenly when
// new partitions land in the directory holding the fewest partitions
// while partition sizes differ, or when a disk is added to a running
// broker. It moves one replica at a time between that broker's
// directories with AlterReplicaLogDirs (KIP-113), a local copy that
// crosses no network.
//
// The rule is the inter-broker disk rule applied to one broker's
// directories (disk.go): a directory's load is the bytes of the replicas
// it holds over its volume's total bytes, the mean is the broker's bytes
// over its directories' total; a directory above the mean by more than
// DiskImbalancePercent of it and by DiskMinImbalanceBytes is over, one
// below by as much is under. While one is, the replica whose
// move from the fullest directory to the emptiest leaves the larger of
// their two loads lowest moves, if that is below the source's load now
// and the destination does not end fuller than the source by more than
// half their difference: each move narrows the spread, so the directories
// settle. Two directories on one filesystem see the same volume, so for
// them the rule evens out the bytes alone. Before that, a directory whose
// volume is fuller than MaxDiskUsagePercent sheds a replica to the
// emptiest volume (shedFullDir).
//
// Bounds: one move per broker at a time. A broker reporting a future log
// (a move under way, the balancer's or an operator's) gets none, and
// neither does a replica whose partition is being reassigned.

// DirReport is one online log directory in a broker's DescribeLogDirs
// answer.
type DirReport struct {
	Path string
	// Total and Usable are the directory's volume (-1: unknown).
	Total, Usable int64
	// Replicas are the sizes of the current replicas it holds; Futures
	// the partitions whose future log (a move into this directory) it
	// holds.
	Replicas map[TopicPartition]int64
	Futures  []TopicPartition
}

// DirMove moves broker's replica of a partition from one of its log
// directories to another (AlterReplicaLogDirs with To as the path).
type DirMove struct {
	Broker    int32
	Topic     string
	Partition int32
	From, To  string
	Bytes     int64
}

func (m DirMove) String() string {
	return fmt.Sprintf("%s-%d: move broker %d's replica %s -> %s (log directory imbalance, %s)", m.Topic, m.Partition, m.Broker, m.From, m.To, FormatBytes(m.Bytes))
}

// DecideDirs plans at most one directory move per broker of reports (by
// broker id), in ascending broker id. skip says a partition must not be
// moved on any broker (being reassigned, or moved by this round's plan).
func DecideDirs(reports map[int32]Report, skip func(TopicPartition) bool, cfg Config) []DirMove {
	var out []DirMove
	for _, id := range slices.Sorted(maps.Keys(reports)) {
		if m, ok := decideDirsOf(reports[id].Dirs, skip, cfg); ok {
			m.Broker = id
			out = append(out, m)
		}
	}
	return out
}

type dirLoad struct {
	d     *DirReport
	bytes int64
}

func (l dirLoad) load() float64 { return float64(l.bytes) / float64(l.d.Total) }

// usedPercent is how full the volume is, with add more bytes written.
func (l dirLoad) usedPercent(add int64) float64 {
	return 100 * float64(l.d.Total-l.d.Usable+add) / float64(l.d.Total)
}

func decideDirsOf(dirs []DirReport, skip func(TopicPartition) bool, cfg Config) (DirMove, bool) {
	if len(dirs) < 2 {
		return DirMove{}, false
	}
	loads := make([]dirLoad, 0, len(dirs))
	var bytes, total int64
	for i := range dirs {
		d := &dirs[i]
		if len(d.Futures) > 0 {
			return DirMove{}, false // one move at a time
		}
		if d.Total <= 0 || d.Usable < 0 {
			return DirMove{}, false // space unknown: nothing to compare
		}
		l := dirLoad{d: d}
		for _, size := range d.Replicas {
			l.bytes += size
		}
		loads = append(loads, l)
		bytes += l.bytes
		total += d.Total
	}
	if m, ok := shedFullDir(loads, skip, cfg); ok {
		return m, true
	}
	mean := float64(bytes) / float64(total)
	off := func(l dirLoad) bool {
		diff := l.load() - mean
		if diff < 0 {
			diff = -diff
		}
		return diff > mean*float64(cfg.DiskImbalancePercent)/100 && diff*float64(l.d.Total) >= float64(cfg.DiskMinImbalanceBytes)
	}
	if !slices.ContainsFunc(loads, off) {
		return DirMove{}, false
	}
	// Fullest and emptiest by load; ties by path, so the plan is stable.
	from, to := extremes(loads, dirLoad.load)
	best, found := DirMove{}, false
	bestWorst := from.load()
	for _, tp := range sortedPartitions(from.d.Replicas) {
		size := from.d.Replicas[tp]
		if size <= 0 || skip != nil && skip(tp) {
			continue
		}
		if to.usedPercent(size) > float64(cfg.MaxDiskUsagePercent) {
			continue // no room without overfilling the destination
		}
		srcAfter := float64(from.bytes-size) / float64(from.d.Total)
		dstAfter := float64(to.bytes+size) / float64(to.d.Total)
		if dstAfter-srcAfter > (from.load()-to.load())/2 {
			continue // would overshoot: the two would trade places
		}
		if worst := max(srcAfter, dstAfter); worst < bestWorst {
			bestWorst, found = worst, true
			best = DirMove{Topic: tp.Topic, Partition: tp.Partition, From: from.d.Path, To: to.d.Path, Bytes: size}
		}
	}
	return best, found
}

// shedFullDir moves a replica off the directory whose volume is fullest
// when it is past MaxDiskUsagePercent (IntraBrokerDiskCapacityGoal), to
// the emptiest volume, if that leaves the fuller of the two volumes less
// full than the source is now and the destination within the limit. It
// judges by what the volumes report used, not by replica bytes: that is
// what runs out. Two directories on one filesystem report the same
// usage, and a move between them frees nothing, so none is made.
func shedFullDir(loads []dirLoad, skip func(TopicPartition) bool, cfg Config) (DirMove, bool) {
	limit := float64(cfg.MaxDiskUsagePercent)
	from, to := extremes(loads, func(l dirLoad) float64 { return l.usedPercent(0) })
	if from.usedPercent(0) <= limit {
		return DirMove{}, false
	}
	best, found := DirMove{}, false
	bestWorst := from.usedPercent(0)
	for _, tp := range sortedPartitions(from.d.Replicas) {
		size := from.d.Replicas[tp]
		if size <= 0 || skip != nil && skip(tp) || to.usedPercent(size) > limit {
			continue
		}
		if worst := max(from.usedPercent(-size), to.usedPercent(size)); worst < bestWorst {
			bestWorst, found = worst, true
			best = DirMove{Topic: tp.Topic, Partition: tp.Partition, From: from.d.Path, To: to.d.Path, Bytes: size}
		}
	}
	return best, found
}

// extremes are the directories with the highest and the lowest of by;
// ties go to the lower path, so the plan is the same on every run.
func extremes(loads []dirLoad, by func(dirLoad) float64) (hi, lo dirLoad) {
	sorted := slices.Clone(loads)
	slices.SortFunc(sorted, func(a, b dirLoad) int {
		return cmp.Or(cmp.Compare(by(b), by(a)), cmp.Compare(a.d.Path, b.d.Path))
	})
	return sorted[0], sorted[len(sorted)-1]
}

func sortedPartitions(m map[TopicPartition]int64) []TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}
