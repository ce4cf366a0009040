package node

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/group"
)

// ledCoordinator is a coordinator of one partition of an internal topic
// in one leader epoch (groupCoordinator, txnCoordinator).
type ledCoordinator interface {
	comparable
	partitionOf() *partition
	leaderEpoch() int32
	isStopped() bool
	stop(why string)
	load()
}

// coordinatorSet runs one coordinator for every partition of an internal
// topic (__consumer_offsets, __transaction_state) this broker leads. It
// follows leadership after every metadata reconcile: a partition newly led
// here gets a coordinator that first loads the partition's log; one led
// elsewhere now, or in a new epoch, is stopped and dropped.
//
// Locking: reconcileMu makes reconciles one at a time, so a reconcile
// working from an older view of leadership never undoes a newer one. mu
// guards the map; it is never held while a coordinator's lock is taken,
// nor the other way round.
type coordinatorSet[C ledCoordinator] struct {
	b     *Broker
	topic string
	start func(p *partition, epoch int32) C

	reconcileMu sync.Mutex

	mu      sync.Mutex
	coords  map[int32]C // by partition index
	stopped bool
}

func newCoordinatorSet[C ledCoordinator](b *Broker, topic string, start func(p *partition, epoch int32) C) coordinatorSet[C] {
	return coordinatorSet[C]{b: b, topic: topic, start: start, coords: map[int32]C{}}
}

// reconcile starts coordinators for the partitions this broker now leads
// and stops the others. Called after every partition reconcile, and after
// a coordinator failed.
func (s *coordinatorSet[C]) reconcile() {
	s.reconcileMu.Lock()
	defer s.reconcileMu.Unlock()
	type led struct {
		p     *partition
		epoch int32
	}
	want := map[int32]led{}
	if t, ok := s.b.Image().Topic(s.topic); ok {
		for _, pm := range t.Partitions {
			if p := s.b.partition(t.ID, pm.Index); p != nil {
				if leading, epoch := p.leadership(); leading {
					want[pm.Index] = led{p, epoch}
				}
			}
		}
	}
	var stale, started []C
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	for idx, c := range s.coords {
		if w, ok := want[idx]; ok && w.p == c.partitionOf() && w.epoch == c.leaderEpoch() && !c.isStopped() {
			continue
		}
		delete(s.coords, idx)
		stale = append(stale, c)
	}
	for idx, w := range want {
		if _, ok := s.coords[idx]; !ok {
			c := s.start(w.p, w.epoch)
			s.coords[idx] = c
			started = append(started, c)
		}
	}
	s.mu.Unlock()
	for _, c := range stale {
		c.stop("leadership moved")
	}
	for _, c := range started {
		go c.load()
	}
}

// stopAll stops every coordinator for good: the broker is stopping.
func (s *coordinatorSet[C]) stopAll() {
	s.mu.Lock()
	s.stopped = true
	coords := s.coords
	s.coords = map[int32]C{}
	s.mu.Unlock()
	for _, c := range coords {
		c.stop("broker stopping")
	}
}

// lookup is the coordinator here of the partition key hashes to (Kafka
// hashes group and transactional ids alike), or the error a client gets:
// NOT_COORDINATOR when another broker leads it, COORDINATOR_LOAD_IN_PROGRESS
// when the image says this broker does and the reconcile that starts its
// coordinator has not run yet.
func (s *coordinatorSet[C]) lookup(key string) (C, error) {
	var none C
	t, ok := s.b.Image().Topic(s.topic)
	if !ok || len(t.Partitions) == 0 {
		return none, kerr.NotCoordinator
	}
	idx := group.PartitionFor(key, int32(len(t.Partitions)))
	s.mu.Lock()
	c, found := s.coords[idx]
	s.mu.Unlock()
	if found && c.partitionOf().id == t.ID {
		return c, nil
	}
	if t.Partitions[idx].Leader == s.b.cfg.NodeID {
		return none, kerr.CoordinatorLoadInProgress
	}
	return none, kerr.NotCoordinator
}

// byPartition is the coordinator of the partition index here, if any.
func (s *coordinatorSet[C]) byPartition(index int32) (C, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.coords[index]
	return c, ok
}

// all lists the coordinators here (those still loading answer
// COORDINATOR_LOAD_IN_PROGRESS themselves).
func (s *coordinatorSet[C]) all() []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]C, 0, len(s.coords))
	for _, c := range s.coords {
		out = append(out, c)
	}
	return out
}

// loadRetryPeriod is how long a coordinator whose load failed (a read
// error) waits before the partition is loaded again.
const loadRetryPeriod = time.Second

// replaceFailed drops a coordinator whose write failed and, backoff
// later, reloads the partition if this broker still leads it. The stopped
// coordinator stays in the map until then (answering as a stopped one
// does), unless a reconcile of a leadership change replaces it first.
func (s *coordinatorSet[C]) replaceFailed(c C, backoff time.Duration) {
	time.AfterFunc(backoff, func() {
		s.mu.Lock()
		if s.coords[c.partitionOf().index] == c {
			delete(s.coords, c.partitionOf().index)
		}
		s.mu.Unlock()
		s.reconcile()
	})
}
