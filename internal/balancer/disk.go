package balancer

import (
	"cmp"
	"fmt"
	"slices"
)

// The disk-aware part of the balancer (Cruise Control's
// DiskUsageDistributionGoal and Redpanda's continuous data balancing are
// the anchors).
//
// A broker's disk load is the sum of the sizes of the partitions the
// assignment lists on it, each partition weighing its largest reported
// replica (what a new copy of it takes), over the total bytes of its log
// directories. The load is computed from the assignment rather than taken
// from what the broker reported holding, so a move counts on both sides
// as soon as it starts (the destination's copy and the source's deletion
// lag the reports) and the next check does not move the same bytes again.
//
// Balance: with mean the cluster's bytes over its total capacity (of the
// available brokers), a broker whose load exceeds mean by more than
// DiskImbalancePercent percent of it and holds DiskMinImbalanceBytes more
// than its share is over; one whose load is under mean by as much, with
// as many bytes missing, is under (a broker that joined). While some
// broker is over, or under, one replica moves from the fullest broker to
// the emptiest that can take one, the partition whose move leaves the
// larger of the two loads lowest, and only if that is below the source's
// load now and the destination does not end fuller than the source by
// more than half their difference now: every move makes the spread
// strictly narrower, and two brokers never trade places over one
// partition, so the balancer does not move the same bytes back and forth.
//
// Space: a broker whose filesystems are fuller than MaxDiskUsagePercent
// (reported total minus usable bytes, plus the bytes of replicas it is
// still to receive) is over as well, and no move goes to a broker that
// would then be fuller than that (Redpanda's
// partition_autobalancing_max_disk_usage_percent). That check applies to
// every move, also a gone broker's replacement and count balance.

// Disk is a broker's log-directory space (DescribeLogDirs v4+ TotalBytes
// and UsableBytes), summed over its online directories.
type Disk struct {
	Total  int64
	Usable int64
}

type diskState struct {
	// on: every available broker reported its disk, so loads compare.
	on bool
	// any: some broker reported its disk; a broker that did not then
	// takes no replica (its room is unknown).
	any bool
	// bytes is each available broker's disk load in bytes; incoming the
	// bytes of replicas listed on it that it did not report (still to be
	// copied, so not in its usable bytes yet).
	bytes    map[int32]int64
	incoming map[int32]int64
	// outgoing is the bytes of this plan's moves off each broker: freed
	// once they complete, which tooFull counts on so that one plan does
	// not empty a too-full broker beyond need.
	outgoing map[int32]int64
	// meanLoad caches mean() until a move changes the loads (meanOK).
	meanLoad float64
	meanOK   bool
}

func newDiskState(s *state) diskState {
	d := diskState{on: len(s.ids) > 0, bytes: map[int32]int64{}, incoming: map[int32]int64{}, outgoing: map[int32]int64{}}
	for _, b := range s.brokers {
		if b.Disk != nil {
			d.any = true
		}
	}
	for _, id := range s.ids {
		if b := s.brokers[id]; b.Disk == nil || b.Disk.Total <= 0 {
			d.on = false
		}
	}
	for _, p := range s.parts {
		size := sizeOf(p)
		for _, r := range p.Replicas {
			d.bytes[r] += size
			if _, ok := p.Sizes[r]; !ok {
				d.incoming[r] += size
			}
		}
	}
	return d
}

// sizeOf is p's size: its largest reported replica (maxSize, computed
// once in newState).
func sizeOf(p *part) int64 { return p.size }

func maxSize(sizes map[int32]int64) int64 {
	var size int64
	for _, n := range sizes {
		size = max(size, n)
	}
	return size
}

// moveBytes books a planned move in the disk loads.
func (s *state) moveBytes(p *part, from, to int32) {
	size := sizeOf(p)
	s.disks.bytes[from] -= size
	s.disks.bytes[to] += size
	s.disks.incoming[to] += size
	s.disks.outgoing[from] += size
	s.disks.meanOK = false
}

// fits: to has room for p. Without reports from anyone, room is not
// judged (replica counts balance alone, as before brokers report).
func (s *state) fits(p *part, to int32) bool {
	if !s.disks.any {
		return true
	}
	d := s.brokers[to].Disk
	if d == nil || d.Total <= 0 {
		return false
	}
	used := d.Total - d.Usable + s.disks.incoming[to] + sizeOf(p)
	return float64(used) <= float64(d.Total)*float64(s.cfg.MaxDiskUsagePercent)/100
}

// tooFull: b's filesystems are fuller than the maximum usage.
func (s *state) tooFull(b int32) bool {
	d := s.brokers[b].Disk
	used := d.Total - d.Usable + s.disks.incoming[b] - s.disks.outgoing[b]
	return float64(used) > float64(d.Total)*float64(s.cfg.MaxDiskUsagePercent)/100
}

// mean is the cluster's disk load: its bytes over its capacity.
func (s *state) mean() float64 {
	if s.disks.meanOK {
		return s.disks.meanLoad
	}
	var bytes, total float64
	for _, id := range s.ids {
		bytes += float64(s.disks.bytes[id])
		total += float64(s.brokers[id].Disk.Total)
	}
	s.disks.meanLoad, s.disks.meanOK = bytes/total, true
	return s.disks.meanLoad
}

// util is b's disk load with delta bytes more.
func (s *state) util(b int32, delta int64) float64 {
	return float64(s.disks.bytes[b]+delta) / float64(s.brokers[b].Disk.Total)
}

// excess is how many bytes b holds beyond its share at load mean (below
// it: negative).
func (s *state) excess(b int32, delta int64, mean float64) float64 {
	return float64(s.disks.bytes[b]+delta) - mean*float64(s.brokers[b].Disk.Total)
}

// over: b, with delta bytes more, holds more than its share by more than
// the threshold.
func (s *state) overAfter(b int32, delta int64) bool {
	mean := s.mean()
	return s.util(b, delta) > mean*(1+float64(s.cfg.DiskImbalancePercent)/100) &&
		s.excess(b, delta, mean) >= float64(s.cfg.DiskMinImbalanceBytes)
}

// underAfter: b, with delta bytes more, holds less than its share by
// more than the threshold.
func (s *state) underAfter(b int32, delta int64) bool {
	mean := s.mean()
	return s.util(b, delta) < mean*(1-float64(s.cfg.DiskImbalancePercent)/100) &&
		-s.excess(b, delta, mean) >= float64(s.cfg.DiskMinImbalanceBytes)
}

func (s *state) under(b int32) bool { return s.underAfter(b, 0) }

// unbalancesDisks: moving size bytes from from to to leaves either beyond
// its disk share, which a count move must not do (Cruise Control's rule
// that a lower-priority goal never breaks a higher one).
func (s *state) unbalancesDisks(from, to int32, size int64) bool {
	return s.overAfter(to, size) || s.underAfter(from, -size)
}

// rebalanceDiskOne picks one move from the fullest broker to the emptiest
// that can take a replica from it, while the disks are uneven.
func (s *state) rebalanceDiskOne(cfg Config) (Move, bool) {
	if !s.disks.on || len(s.ids) < 2 {
		return Move{}, false
	}
	byUtil := slices.Clone(s.ids)
	slices.SortStableFunc(byUtil, func(a, b int32) int { return cmp.Compare(s.util(a, 0), s.util(b, 0)) })
	fullest := slices.Clone(byUtil)
	slices.Reverse(fullest)
	// Stable sorts over ascending ids, then reversed: among equal loads
	// the higher id gives first. Deterministic either way.
	for _, from := range fullest {
		// A broker over the maximum usage sheds bytes to any broker with
		// room (fits), whatever their loads: its space is what matters.
		full := s.tooFull(from)
		fromOver := full || s.overAfter(from, 0)
		for _, to := range byUtil {
			if to == from || s.tooFull(to) {
				continue
			}
			if !full && s.util(to, 0) >= s.util(from, 0) {
				break
			}
			if !fromOver && !s.under(to) {
				break // byUtil ascends: no later broker is under either
			}
			if p, ok := s.diskMovable(from, to, !full); ok {
				return s.move(p, from, to, DiskImbalance), true
			}
		}
	}
	return Move{}, false
}

// diskMovable is the partition of from whose move to to leaves the larger
// of their two loads lowest, if below from's load now and to does not
// end above from by more than half their difference now (narrower: two
// brokers never trade places back and forth over one partition, while a
// large partition may still halve a large gap; a move off a too-full
// broker need not narrow the loads); among equals, one from does not
// lead, then the first.
func (s *state) diskMovable(from, to int32, narrower bool) (*part, bool) {
	now := s.util(from, 0)
	var pick *part
	var best float64
	for _, p := range s.candidates(from, to) {
		size := sizeOf(p)
		if size <= 0 {
			continue
		}
		from2, to2 := s.util(from, -size), s.util(to, size)
		after := max(from2, to2)
		overshoots := to2 > from2 && to2-from2 > (now-s.util(to, 0))/2
		if narrower && (overshoots || after >= now) {
			continue
		}
		if pick == nil || after < best || after == best && p.Leader != from && pick.Leader == from {
			pick, best = p, after
		}
	}
	return pick, pick != nil
}

// FormatBytes prints n in binary units, as the tools print sizes.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// TopicPartition names a partition in a Report.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Report is what one broker's DescribeLogDirs answer says: its disk
// (nil unless every online directory told its space), the size of each
// current replica it holds, and its online directories one by one
// (dirs.go). Future logs (moves between its directories under way) are
// in Dirs only: the partition's size is its current replica's.
type Report struct {
	Disk  *Disk
	Sizes map[TopicPartition]int64
	Dirs  []DirReport
}

// ReportBuilder sums a DescribeLogDirs answer, directory by directory.
type ReportBuilder struct {
	r       Report
	unknown bool
	// dir is the directory the next replicas are in; nil after an
	// offline one.
	dir *DirReport
}

// Dir adds one log directory: its path and its volume's total and usable
// bytes (-1 unknown). An offline directory adds nothing: its replicas
// are not served, and its space is not the broker's to use.
func (rb *ReportBuilder) Dir(path string, total, usable int64, offline bool) {
	rb.dir = nil
	if offline {
		return
	}
	rb.r.Dirs = append(rb.r.Dirs, DirReport{Path: path, Total: total, Usable: usable})
	rb.dir = &rb.r.Dirs[len(rb.r.Dirs)-1]
	if total <= 0 || usable < 0 {
		rb.unknown = true
		return
	}
	if rb.r.Disk == nil {
		rb.r.Disk = &Disk{}
	}
	rb.r.Disk.Total += total
	rb.r.Disk.Usable += usable
}

// Replica adds one replica of the directory added last: its size, or,
// for a future log, that a move into the directory is under way.
func (rb *ReportBuilder) Replica(topic string, partition int32, size int64, future bool) {
	tp := TopicPartition{topic, partition}
	if rb.dir != nil {
		if future {
			rb.dir.Futures = append(rb.dir.Futures, tp)
		} else {
			if rb.dir.Replicas == nil {
				rb.dir.Replicas = map[TopicPartition]int64{}
			}
			rb.dir.Replicas[tp] += max(size, 0)
		}
	}
	if future {
		return
	}
	if rb.r.Sizes == nil {
		rb.r.Sizes = map[TopicPartition]int64{}
	}
	rb.r.Sizes[tp] += max(size, 0)
}

// Report is what was added.
func (rb *ReportBuilder) Report() Report {
	r := rb.r
	if rb.unknown {
		r.Disk = nil
	}
	return r
}

// Apply puts reports (by broker id) into the view: each reporting
// broker's Disk, each partition's Sizes.
func Apply(brokers []Broker, partitions []Partition, reports map[int32]Report) {
	for i := range brokers {
		if r, ok := reports[brokers[i].ID]; ok && r.Disk != nil {
			d := *r.Disk
			brokers[i].Disk = &d
		}
	}
	for i := range partitions {
		p := &partitions[i]
		for _, id := range p.Replicas {
			size, ok := reports[id].Sizes[TopicPartition{p.Topic, p.Index}]
			if !ok {
				continue
			}
			if p.Sizes == nil {
				p.Sizes = map[int32]int64{}
			}
			p.Sizes[id] = size
		}
	}
}

// Load is one broker's share of the cluster as the balancer weighs it,
// for tools to print.
type Load struct {
	ID       int32
	Replicas int
	// Bytes is the sum of the sizes of the partitions listed on it; Disk
	// its report (nil: unknown).
	Bytes int64
	Disk  *Disk
}

// Loads is each broker's load in the view, by ascending id.
func Loads(brokers []Broker, partitions []Partition) []Load {
	s := newState(brokers, partitions, Config{})
	var out []Load
	for _, b := range brokers {
		out = append(out, Load{ID: b.ID, Replicas: len(s.on[b.ID]), Bytes: s.disks.bytes[b.ID], Disk: b.Disk})
	}
	slices.SortFunc(out, func(a, b Load) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
