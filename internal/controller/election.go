package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/invariant"
	"github.com/skein-log/skein/internal/metadata"
)

// electionKind says where a new leader came from, which decides the ISR and
// ELR that go with it.
type electionKind int

const (
	electedNone electionKind = iota
	electedFromISR
	electedFromELR
	electedUnclean
)

// ElectLeader picks a new leader for p. It is called when p needs a new
// leader, so the current leader gets no preference. In replica order it picks
// the first replica that is alive and
//
//  1. in the ISR (clean: holds every acknowledged record), else
//  2. in the ELR (KIP-966: outside the ISR but still holds every committed
//     record, so still clean), else
//  3. if unclean, any replica (may lose acknowledged records).
//
// fromISR reports case 1; ok is false when no replica qualifies.
func ElectLeader(p metadata.Partition, isAlive func(int32) bool, unclean bool) (leader int32, fromISR bool, ok bool) {
	leader, kind := electLeader(p, isAlive, unclean)
	return leader, kind == electedFromISR, kind != electedNone
}

func electLeader(p metadata.Partition, isAlive func(int32) bool, unclean bool) (int32, electionKind) {
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && isAlive(r) {
			return r, electedFromISR
		}
	}
	for _, r := range p.Replicas {
		if slices.Contains(p.ELR, r) && isAlive(r) {
			return r, electedFromELR
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if isAlive(r) {
				return r, electedUnclean
			}
		}
	}
	return metadata.NoLeader, electedNone
}

// withLeader returns p led by leader (or leaderless for electedNone) with the
// ISR and ELR the election implies: an ELR or unclean leader becomes the sole
// ISR member (it defines what is committed now); an unclean election also
// clears the ELR, since the others may hold records the new leader lacks.
func withLeader(p metadata.Partition, leader int32, kind electionKind) metadata.Partition {
	switch kind {
	case electedNone:
		p.Leader = metadata.NoLeader
	case electedFromISR:
		p.Leader = leader
	case electedFromELR:
		p.Leader = leader
		p.ISR = []int32{leader}
		p.ELR = without(p.ELR, leader)
	case electedUnclean:
		p.Leader = leader
		p.ISR = []int32{leader}
		p.ELR = []int32{}
	}
	return p
}

// FenceBroker decides fencing broker id (its heartbeats stopped or its
// session ended): a FenceBroker record unless it is already fenced, then one
// PartitionChange per partition whose ISR holds it. Topics are visited by
// name and partitions by index, so the output is deterministic.
//
// ISR rule (a simplified KIP-966): the broker leaves the ISR. If that would
// empty the ISR, it moves to the ELR instead, so the last replica known to
// hold every acknowledged record stays eligible and a clean election can
// pick it when it returns, rather than the partition needing an unclean
// election. (Full KIP-966 also moves replicas into the ELR whenever the ISR
// drops below min.insync.replicas; that needs the high-watermark rule from
// the replication package and comes with it.)
//
// Where the broker led (or nobody led), a new leader is elected cleanly among
// the remaining ISR, then the ELR; without one the partition stays leaderless.
// Unclean elections are never made here; see ElectLeaderless.
func FenceBroker(im *metadata.Image, id int32) ([]metadata.Record, error) {
	b, ok := im.Broker(id)
	if !ok {
		return nil, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	var recs []metadata.Record
	if !b.Fenced {
		recs = append(recs, metadata.FenceBroker{ID: id, Epoch: b.Epoch})
	}
	return append(recs, leaveISRs(im, id)...), nil
}

// BeginControlledShutdown decides the start of broker id's controlled
// shutdown: a BeginControlledShutdown record, then the same partition changes
// as FenceBroker, so that leaderships move away while the broker still serves
// and clients fail over before it stops.
func BeginControlledShutdown(im *metadata.Image, id int32) ([]metadata.Record, error) {
	b, ok := im.Broker(id)
	if !ok {
		return nil, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	var recs []metadata.Record
	if !b.Fenced && !b.InControlledShutdown {
		recs = append(recs, metadata.BeginControlledShutdown{ID: id, Epoch: b.Epoch})
	}
	return append(recs, leaveISRs(im, id)...), nil
}

// leaveISRs removes id from every ISR holding it (to the ELR if it was the
// last member) and re-elects where it led or nobody leads.
func leaveISRs(im *metadata.Image, id int32) []metadata.Record {
	var recs []metadata.Record
	alive := func(r int32) bool { return r != id && im.IsActive(r) }
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if !slices.Contains(p.ISR, id) {
				continue
			}
			next := p
			next.ISR = without(p.ISR, id)
			if len(next.ISR) == 0 {
				next.ELR = append(slices.Clone(p.ELR), id)
			}
			if p.Leader == id || p.Leader == metadata.NoLeader {
				leader, kind := electLeader(next, alive, false)
				next = withLeader(next, leader, kind)
			}
			recs = append(recs, changeRecord(t.ID, p, next))
		}
	}
	return recs
}

// UnfenceBroker decides unfencing broker id (it registered and caught up with
// metadata): an UnfenceBroker record, then leaders for leaderless partitions
// it can now lead cleanly.
func UnfenceBroker(im *metadata.Image, id int32) ([]metadata.Record, error) {
	b, ok := im.Broker(id)
	if !ok {
		return nil, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	var recs []metadata.Record
	if b.Fenced || b.InControlledShutdown {
		recs = append(recs, metadata.UnfenceBroker{ID: id, Epoch: b.Epoch})
	}
	alive := func(r int32) bool { return r == id || im.IsActive(r) }
	return append(recs, electLeaderless(im, alive, nil)...), nil
}

// ElectLeaderless elects leaders for all partitions that have none, cleanly,
// or uncleanly for topics where unclean(topic) is true
// (unclean.leader.election.enable). unclean may be nil.
func ElectLeaderless(im *metadata.Image, unclean func(*metadata.Topic) bool) []metadata.Record {
	return electLeaderless(im, im.IsActive, unclean)
}

func electLeaderless(im *metadata.Image, alive func(int32) bool, unclean func(*metadata.Topic) bool) []metadata.Record {
	// The image counts its leaderless partitions: with none (an idle
	// cluster's every maintenance pass) there is nothing to walk.
	if im.LeaderlessPartitions() == 0 && !invariant.Panics {
		return nil
	}
	var recs []metadata.Record
	leaderless := 0
	for _, t := range im.Topics() {
		// The controller's maintenance runs this over every partition ten
		// times a second: the partitions are looked at in place, not
		// copied, and unclean (which resolves the topic's configuration)
		// is asked only of a topic with a leaderless partition.
		resolved, allowUnclean := false, false
		for i := range t.Partitions {
			if t.Partitions[i].Leader != metadata.NoLeader {
				continue
			}
			leaderless++
			p := t.Partitions[i]
			if !resolved {
				resolved, allowUnclean = true, unclean != nil && unclean(t)
			}
			leader, kind := electLeader(p, alive, allowUnclean)
			if kind == electedNone {
				continue
			}
			recs = append(recs, changeRecord(t.ID, p, withLeader(p, leader, kind)))
		}
	}
	if invariant.Panics && leaderless != im.LeaderlessPartitions() {
		invariant.Broken("the image counts %d leaderless partitions, %d found", im.LeaderlessPartitions(), leaderless)
	}
	return recs
}

// PreferredLeaderElection moves leadership back to each partition's first
// replica where that replica is active and in the ISR but not leading, which
// restores the balance placement chose after failures have moved leaders.
func PreferredLeaderElection(im *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			preferred := p.Replicas[0]
			if p.Leader == preferred || !slices.Contains(p.ISR, preferred) || !im.IsActive(preferred) {
				continue
			}
			next := p
			next.Leader = preferred
			recs = append(recs, changeRecord(t.ID, p, next))
		}
	}
	return recs
}

// changeRecord describes the move from p to next, listing only changed fields.
func changeRecord(topic metadata.TopicID, p, next metadata.Partition) metadata.PartitionChange {
	c := metadata.PartitionChange{TopicID: topic, Partition: p.Index}
	if next.Leader != p.Leader {
		c.Leader = &next.Leader
	}
	c.ISR = changedList(p.ISR, next.ISR)
	c.ELR = changedList(p.ELR, next.ELR)
	c.Replicas = changedList(p.Replicas, next.Replicas)
	c.AddingReplicas = changedList(p.AddingReplicas, next.AddingReplicas)
	c.RemovingReplicas = changedList(p.RemovingReplicas, next.RemovingReplicas)
	return c
}

// changedList is the field of a PartitionChange that moves a list from
// was to now: nil when unchanged, else a copy (never nil, so an emptied
// list is recorded as empty rather than unchanged).
func changedList(was, now []int32) *[]int32 {
	if slices.Equal(was, now) {
		return nil
	}
	out := slices.Clone(now)
	if out == nil {
		out = []int32{}
	}
	return &out
}

// isNoChange reports whether c changes nothing (applying it would still
// bump the partition epoch, so it is not proposed).
func isNoChange(c metadata.PartitionChange) bool {
	return c.Leader == nil && c.ISR == nil && c.ELR == nil && c.Replicas == nil && c.AddingReplicas == nil && c.RemovingReplicas == nil
}

// without returns ids minus id, as a new slice (never aliasing ids, which may
// be shared with an image).
func without(ids []int32, id int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}
