package balancer

import (
	"cmp"
	"slices"
)

// Replica capacity (Cruise Control's ReplicaCapacityGoal, a hard goal):
// a broker registers how many replicas its open-files limit lets it keep
// open (Broker.ReplicaCapacity), and the controller refuses a
// reassignment that would list more on it (controller/capacity.go,
// INVALID_REPLICA_ASSIGNMENT). The balancer plans against the same
// count, so a move it plans is one the controller accepts: a move it
// planned onto a full broker would be refused at every check, and the
// balancer, deciding the same thing again from the same view, would
// never plan the move that would be accepted instead.
//
// The count is the controller's: every replica a partition lists (those
// a reassignment adds and those it removes too), on every broker
// available or not, and a planned move adds one to its destination and
// takes nothing from its source until it completes. So no move goes to
// a broker whose count would then pass its capacity (canTake: the gone
// broker's replacement, disk and count balance alike), and a broker
// whose count is already past it (its capacity shrank: it restarted with
// a lower open-files limit) has replicas moved off it to brokers with
// room before any disk or count balance (drainOne), until the moves
// planned off it bring it back to its capacity. The capacity is a
// constraint, never a weight: count balance still evens out the counts
// of the brokers that can take replicas.

// capState is each broker's replica count as the controller checks it.
type capState struct {
	// on: some broker states a capacity (nothing to check otherwise).
	on bool
	// held is the replicas listed on each broker, plus those this plan
	// moves onto it; leaving the replicas this plan moves off it, still
	// listed until their moves complete.
	held, leaving map[int32]int
}

func newCapState(s *state) capState {
	c := capState{held: map[int32]int{}, leaving: map[int32]int{}}
	for _, b := range s.brokers {
		c.on = c.on || b.ReplicaCapacity > 0
	}
	if !c.on {
		return c
	}
	for _, p := range s.parts {
		for _, r := range p.Replicas {
			c.held[r]++
		}
	}
	return c
}

// hasRoom: b may take one replica more without passing its capacity.
func (s *state) hasRoom(b int32) bool {
	limit := s.brokers[b].ReplicaCapacity
	return limit <= 0 || s.caps.held[b]+1 <= limit
}

// overCapacity: b would still hold more replicas than its capacity once
// the moves planned off it complete.
func (s *state) overCapacity(b int32) bool {
	limit := s.brokers[b].ReplicaCapacity
	return limit > 0 && s.caps.held[b]-s.caps.leaving[b] > limit
}

// moveCount books a planned move in the capacity counts.
func (s *state) moveCount(from, to int32) {
	if s.caps.on {
		s.caps.held[to]++
		s.caps.leaving[from]++
	}
}

// drainOne picks one move off an available broker holding more replicas
// than its capacity (the one most over first, then the lowest id) to a
// broker with room, of a partition drainable there. The replica on the source
// may be out of the ISR: a broker over its capacity leaves replicas
// closed (node/fdlimit.go), and moving those first brings their
// partitions back to full replication. Then one the source does not lead
// (no leadership change), then, with disks known, the smallest (the
// least to copy). The destination keeps the partition's rack spread,
// then gives the most racks, then is the least loaded, then the lowest
// id.
func (s *state) drainOne() (Move, bool) {
	if !s.caps.on {
		return Move{}, false
	}
	var over []int32
	for _, id := range s.ids {
		if s.overCapacity(id) {
			over = append(over, id)
		}
	}
	excess := func(b int32) int { return s.caps.held[b] - s.caps.leaving[b] - s.brokers[b].ReplicaCapacity }
	slices.SortStableFunc(over, func(a, b int32) int { return cmp.Compare(excess(b), excess(a)) })
	for _, from := range over {
		var pick *part
		pickTo := int32(-1)
		better := func(p *part) bool {
			if pick == nil {
				return true
			}
			if a, b := !slices.Contains(p.ISR, from), !slices.Contains(pick.ISR, from); a != b {
				return a
			}
			if a, b := p.Leader != from, pick.Leader != from; a != b {
				return a
			}
			return s.disks.on && sizeOf(p) < sizeOf(pick)
		}
		for _, p := range s.on[from] {
			if !s.drainable(p, from) || !better(p) {
				continue
			}
			if to, ok := s.drainDestination(p, from); ok {
				pick, pickTo = p, to
			}
		}
		if pick != nil {
			return s.move(pick, from, pickTo, OverCapacity), true
		}
	}
	return Move{}, false
}

// drainable: p's replica on from may move off it: p is not being moved,
// its every other replica is on an available broker and in the ISR, and
// its ISR is not empty (the new replica has a replica to copy from, so
// the move can complete).
func (s *state) drainable(p *part, from int32) bool {
	if p.Reassigning || p.moved || len(p.ISR) == 0 {
		return false
	}
	for _, r := range p.Replicas {
		if r == from {
			continue
		}
		if b, ok := s.brokers[r]; !ok || !b.Available || !slices.Contains(p.ISR, r) {
			return false
		}
	}
	return true
}

// drainDestination is the broker to take from's replica of p off a
// broker over its capacity: one that can take it (canTake: room for one
// more replica and for its bytes) without narrowing its rack spread;
// the most racks, then the least loaded, then the lowest id.
func (s *state) drainDestination(p *part, from int32) (int32, bool) {
	best, bestRacks := int32(-1), 0
	now := s.racksAfter(p, from, from)
	for _, b := range s.ids {
		if !s.canTake(p, b) {
			continue
		}
		racks := s.racksAfter(p, from, b)
		if racks < now {
			continue
		}
		if best < 0 || racks > bestRacks || racks == bestRacks && s.load[b] < s.load[best] {
			best, bestRacks = b, racks
		}
	}
	return best, best >= 0
}
