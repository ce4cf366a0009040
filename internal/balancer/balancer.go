// Package balancer is the pure decision of Skein's automatic balancer
// (auto.replica.balance.enable; Redpanda's continuous data balancing and
// Cruise Control are the anchors): from a view of the cluster it picks a
// bounded set of replica moves and the preferred-leader elections to make.
// The active controller runs it on a timer and submits the moves as KIP-455
// reassignments; `skein cluster balance` runs it on a client-side view. It
// does no I/O and reads no clock: how long a broker has been unavailable is
// part of the view.
package balancer

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Broker is one registered broker as the balancer sees it.
type Broker struct {
	ID   int32
	Rack string
	// Available brokers may take replicas: unfenced and not in a
	// controlled shutdown.
	Available bool
	// UnavailableFor is how long the broker has been unavailable, as far
	// as the caller knows (0 when available or unknown).
	UnavailableFor time.Duration
	// Disk is the space of the broker's log directories as it last
	// reported it; nil when unknown (disk.go).
	Disk *Disk
	// ReplicaCapacity is how many replicas the broker can keep open, as
	// it registered it (metadata.Broker.ReplicaCapacity, from its
	// open-files limit); 0 states no limit (capacity.go).
	ReplicaCapacity int
}

// Partition is one partition's replica state.
type Partition struct {
	Topic string
	Index int32
	// Replicas in preference order; during a reassignment the target
	// followed by the replicas being removed.
	Replicas []int32
	ISR      []int32
	Leader   int32
	// Reassigning is set while a reassignment of the partition is in
	// progress: the balancer leaves it alone and counts it as a move in
	// flight.
	Reassigning bool
	// Sizes is the size in bytes of each replica's log, by broker, as the
	// brokers reported them (DescribeLogDirs); a replica not reported is
	// absent. Nil when sizes are unknown.
	Sizes map[int32]int64
}

// Config is the balancer's part of the broker configuration.
type Config struct {
	// MaxConcurrentMoves is replica.balance.max.concurrent.moves: no move
	// starts while this many partitions are being reassigned.
	MaxConcurrentMoves int
	// UnavailableTimeout is replica.balance.broker.unavailable.timeout.ms.
	UnavailableTimeout time.Duration
	// ImbalancePercent is replica.imbalance.per.broker.percentage.
	ImbalancePercent int
	// DiskImbalancePercent is replica.balance.disk.imbalance.percentage,
	// DiskMinImbalanceBytes replica.balance.disk.imbalance.min.bytes and
	// MaxDiskUsagePercent replica.balance.max.disk.usage.percent
	// (disk.go).
	DiskImbalancePercent  int
	DiskMinImbalanceBytes int64
	MaxDiskUsagePercent   int
	// LogDirs is replica.balance.log.dirs.enable: the controller also
	// evens out each broker's log directories (dirs.go).
	LogDirs bool
}

// Reason says why a move was chosen.
type Reason string

const (
	// BrokerGone: the source broker was unavailable past the timeout; the
	// move restores the replication factor on available brokers.
	BrokerGone Reason = "broker unavailable"
	// Imbalance: the source holds more replicas than the destination by
	// more than the threshold (a broker that joined holds none).
	Imbalance Reason = "replica imbalance"
	// DiskImbalance: the source's disk holds more of the cluster's bytes
	// than its share by more than the threshold, or is fuller than the
	// maximum usage (disk.go).
	DiskImbalance Reason = "disk imbalance"
	// OverCapacity: the source holds more replicas than the capacity it
	// registered (capacity.go).
	OverCapacity Reason = "over replica capacity"
)

// Move replaces one replica of a partition: Target is the new replica
// list (the reassignment's target), From is replaced by To at its place,
// so a preferred leadership passes to the newcomer.
type Move struct {
	Topic     string
	Partition int32
	From, To  int32
	Target    []int32
	Reason    Reason
	// Bytes is the partition's size (its largest replica's), what the
	// new replica copies; 0 when sizes are unknown.
	Bytes int64
}

func (m Move) String() string {
	size := ""
	if m.Bytes > 0 {
		size = ", " + FormatBytes(m.Bytes)
	}
	return fmt.Sprintf("%s-%d: move replica %d -> %d (target %v, %s%s)", m.Topic, m.Partition, m.From, m.To, m.Target, m.Reason, size)
}

// Election is a partition whose leader should move to its preferred
// replica (the first), which is available and in sync: what the
// controller's preferred-leader rebalance (auto.leader.rebalance.enable)
// will do, reported by `skein cluster balance`.
type Election struct {
	Topic     string
	Partition int32
	From, To  int32
}

func (e Election) String() string {
	return fmt.Sprintf("%s-%d: elect preferred leader %d (now %d)", e.Topic, e.Partition, e.To, e.From)
}

// Plan is what the balancer would do now.
type Plan struct {
	Moves     []Move
	Elections []Election
	// InFlight is how many partitions were being reassigned already.
	InFlight int
}

// Decide plans the moves and elections for the cluster described by
// brokers and partitions.
//
// First, every partition with a replica on a broker unavailable for at
// least cfg.UnavailableTimeout gets that replica moved to an available
// broker; this is the only move made on an under-replicated partition,
// since it restores the replication factor. Then, while an available
// broker holds more replicas than its ReplicaCapacity, one of them moves
// to a broker with room (capacity.go). Then, when every available
// broker reported its disk, while their disks are uneven (disk.go) one
// replica moves from the fullest to the emptiest, and then, while the
// available brokers' replica counts are uneven (see imbalanced), one
// replica moves from the most to the least loaded broker; both take a
// fully in-sync partition. No move goes to a broker that reported a disk
// without room for the partition (disk.go's fits), or, once some broker
// reported one, to a broker that did not, nor to a broker it would take
// past its ReplicaCapacity (capacity.go's hasRoom). Never more moves than
// cfg.MaxConcurrentMoves minus those in flight. Every move keeps the partition's rack spread (it never puts two
// replicas on a rack when another rack was free), and none removes a
// partition's last in-sync replica: the reassignment could then never
// complete. Ties go to the lower topic, partition and broker id, so the
// plan is the same on every run.
func Decide(brokers []Broker, partitions []Partition, cfg Config) Plan {
	s := newState(brokers, partitions, cfg)
	plan := Plan{InFlight: s.inFlight}
	budget := max(0, cfg.MaxConcurrentMoves) - s.inFlight
	for _, p := range s.parts {
		if budget <= 0 {
			break
		}
		if p.Reassigning {
			continue
		}
		for _, r := range p.Replicas {
			b, known := s.brokers[r]
			gone := !known || !b.Available && b.UnavailableFor >= cfg.UnavailableTimeout
			if !gone || !keepsInSync(p, r) {
				continue
			}
			to, ok := s.destination(p, r)
			if !ok {
				continue
			}
			plan.Moves = append(plan.Moves, s.move(p, r, to, BrokerGone))
			budget--
			break
		}
	}
	for budget > 0 {
		m, ok := s.drainOne()
		if !ok {
			break
		}
		plan.Moves = append(plan.Moves, m)
		budget--
	}
	for budget > 0 {
		m, ok := s.rebalanceDiskOne(cfg)
		if !ok {
			break
		}
		plan.Moves = append(plan.Moves, m)
		budget--
	}
	for budget > 0 {
		m, ok := s.rebalanceOne(cfg)
		if !ok {
			break
		}
		plan.Moves = append(plan.Moves, m)
		budget--
	}
	for _, p := range s.parts {
		if len(p.Replicas) == 0 || p.moved {
			continue
		}
		pref := p.Replicas[0]
		if b, ok := s.brokers[pref]; p.Leader != pref && ok && b.Available && slices.Contains(p.ISR, pref) {
			plan.Elections = append(plan.Elections, Election{Topic: p.Topic, Partition: p.Index, From: p.Leader, To: pref})
		}
	}
	return plan
}

type part struct {
	Partition
	moved bool // a move of this plan starts its reassignment
	// inSync: fullyInSync, computed once (brokers' availability and
	// ISRs do not change within a plan); size: sizeOf.
	inSync bool
	size   int64
}

type state struct {
	cfg     Config
	brokers map[int32]Broker
	ids     []int32 // available brokers, ascending
	load    map[int32]int
	parts   []*part
	// on lists each broker's partitions in parts' order, as the view
	// gave them: a partition moved by this plan stays listed under its
	// old replicas, and candidates skips it.
	on       map[int32][]*part
	inFlight int
	disks    diskState
	caps     capState
}

func newState(brokers []Broker, partitions []Partition, cfg Config) *state {
	s := &state{cfg: cfg, brokers: map[int32]Broker{}, load: map[int32]int{}}
	for _, b := range brokers {
		s.brokers[b.ID] = b
		if b.Available {
			s.ids = append(s.ids, b.ID)
			s.load[b.ID] = 0
		}
	}
	slices.Sort(s.ids)
	for _, p := range partitions {
		p.Replicas, p.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		s.parts = append(s.parts, &part{Partition: p})
		if p.Reassigning {
			s.inFlight++
		}
		for _, r := range p.Replicas {
			if _, ok := s.load[r]; ok {
				s.load[r]++
			}
		}
	}
	slices.SortFunc(s.parts, func(a, b *part) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
	})
	s.on = map[int32][]*part{}
	for _, p := range s.parts {
		p.inSync, p.size = s.fullyInSync(p), maxSize(p.Sizes)
		for _, r := range p.Replicas {
			s.on[r] = append(s.on[r], p)
		}
	}
	s.disks = newDiskState(s)
	s.caps = newCapState(s)
	return s
}

// keepsInSync: removing r leaves p an in-sync replica, so a reassignment
// replacing r can complete without losing committed records.
func keepsInSync(p *part, r int32) bool {
	return slices.ContainsFunc(p.ISR, func(i int32) bool { return i != r })
}

// fullyInSync: every replica is in the ISR and on an available broker.
func (s *state) fullyInSync(p *part) bool {
	for _, r := range p.Replicas {
		if b, ok := s.brokers[r]; !ok || !b.Available || !slices.Contains(p.ISR, r) {
			return false
		}
	}
	return true
}

// racksAfter counts the distinct racks p's replicas would span with from
// replaced by to (a broker without a rack counts as its own).
func (s *state) racksAfter(p *part, from, to int32) int {
	racks := map[string]bool{}
	for _, r := range p.Replicas {
		if r == from {
			r = to
		}
		rack := s.brokers[r].Rack
		if rack == "" {
			rack = fmt.Sprintf("\x00broker-%d", r)
		}
		racks[rack] = true
	}
	return len(racks)
}

// canTake: to is available, not already a replica of p, and has room
// for it: its bytes (fits) and one replica more (hasRoom).
func (s *state) canTake(p *part, to int32) bool {
	return !slices.Contains(p.Replicas, to) && s.brokers[to].Available && s.fits(p, to) && s.hasRoom(to)
}

// destination is the available broker to take from's replica of p: the
// one giving the most distinct racks, then the least loaded, then the
// lowest id.
func (s *state) destination(p *part, from int32) (int32, bool) {
	best, bestRacks := int32(-1), 0
	for _, b := range s.ids {
		if !s.canTake(p, b) {
			continue
		}
		racks := s.racksAfter(p, from, b)
		if best < 0 || racks > bestRacks || racks == bestRacks && s.load[b] < s.load[best] {
			best, bestRacks = b, racks
		}
	}
	return best, best >= 0
}

func (s *state) move(p *part, from, to int32, why Reason) Move {
	target := slices.Clone(p.Replicas)
	target[slices.Index(target, from)] = to
	p.moved = true
	if _, ok := s.load[from]; ok {
		s.load[from]--
	}
	s.load[to]++
	s.moveBytes(p, from, to)
	s.moveCount(from, to)
	return Move{Topic: p.Topic, Partition: p.Index, From: from, To: to, Target: target, Reason: why, Bytes: sizeOf(p)}
}

// imbalanced reports whether moving one replica from most to least loaded
// is worth it: they differ by more than one, and either the least loaded
// holds none while the other holds two or more (a broker that joined), or
// one of them is off the mean by more than pct percent.
func imbalanced(most, least int, mean float64, pct int) bool {
	if most-least <= 1 {
		return false
	}
	if least == 0 && most >= 2 {
		return true
	}
	limit := mean * float64(pct) / 100
	return float64(most)-mean > limit || mean-float64(least) > limit
}

// rebalanceOne picks one move from the most loaded available broker to
// the least loaded one that can take a replica from it, if the counts are
// imbalanced. The replica comes from a fully in-sync partition not being
// moved, preferring one the source does not lead (no leadership change),
// whose rack spread does not shrink.
func (s *state) rebalanceOne(cfg Config) (Move, bool) {
	pct := cfg.ImbalancePercent
	if len(s.ids) < 2 {
		return Move{}, false
	}
	total := 0
	for _, id := range s.ids {
		total += s.load[id]
	}
	mean := float64(total) / float64(len(s.ids))
	// s.ids is ascending, so equally loaded brokers stay in id order.
	most := slices.Clone(s.ids)
	slices.SortStableFunc(most, func(a, b int32) int { return cmp.Compare(s.load[b], s.load[a]) })
	least := slices.Clone(s.ids)
	slices.SortStableFunc(least, func(a, b int32) int { return cmp.Compare(s.load[a], s.load[b]) })
	for _, from := range most {
		for _, to := range least {
			if !imbalanced(s.load[from], s.load[to], mean, pct) {
				break
			}
			if p, ok := s.movable(from, to); ok {
				return s.move(p, from, to, Imbalance), true
			}
		}
	}
	return Move{}, false
}

// movable picks the partition whose replica on from moves to to for
// count balance. With disks known it must leave neither beyond its disk
// share (disk.go), and the smallest such partition goes, so that count
// balance disturbs disk balance the least.
func (s *state) movable(from, to int32) (*part, bool) {
	var pick *part
	better := func(p *part) bool {
		if pick == nil {
			return true
		}
		if s.disks.on && sizeOf(p) != sizeOf(pick) {
			return sizeOf(p) < sizeOf(pick)
		}
		return p.Leader != from && pick.Leader == from
	}
	for _, p := range s.candidates(from, to) {
		if s.disks.on && s.unbalancesDisks(from, to, sizeOf(p)) {
			continue
		}
		if better(p) {
			pick = p
		}
	}
	return pick, pick != nil
}

// candidates are the partitions whose replica on from may move to to:
// fully in sync, not being moved, to can take it, and its rack spread
// does not shrink.
func (s *state) candidates(from, to int32) []*part {
	var out []*part
	for _, p := range s.on[from] {
		if p.Reassigning || p.moved || !p.inSync || !s.canTake(p, to) {
			continue
		}
		if s.racksAfter(p, from, to) < s.racksAfter(p, from, from) {
			continue
		}
		out = append(out, p)
	}
	return out
}
