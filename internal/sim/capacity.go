package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// Replica capacity (Options.ReplicaCapacity): a real broker tells the
// controller at registration how many replicas its open-files limit lets
// it keep open (metadata.Broker.ReplicaCapacity), and the controller
// places no more on it. Here every broker registers the most replicas
// the run's topic creation places on one node plus the run's slack, so
// the creation fits and reassignments (the operator's, the balancer's)
// meet full nodes; checkCapacity requires that no node ever holds more
// (or, once its capacity shrank, more than before).

// creationCapacity is what every broker registers, 0 without
// Options.ReplicaCapacity: the peak of the run's creation, decided by
// the controller's own CreateTopic on an image of the run's brokers, all
// active (the creation waits for that), plus the slack.
func (c *Cluster) creationCapacity() int32 {
	if !c.opts.ReplicaCapacity {
		return 0
	}
	im := metadata.Empty(c.clusterID)
	var err error
	for _, id := range c.ids {
		if im, err = im.Apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: id, Epoch: 1}}); err != nil {
			panic(err)
		}
	}
	for i, req := range c.topicRequests() {
		recs, err := controller.CreateTopic(im, req, controller.Defaults{NumPartitions: 1, ReplicationFactor: 1}, metadata.TopicID{0: byte(i + 1), 15: 1}, nil)
		if err != nil {
			panic(err)
		}
		if im, err = im.Apply(recs...); err != nil {
			panic(err)
		}
	}
	peak := 0
	for _, n := range replicasHeld(im) {
		peak = max(peak, n)
	}
	return int32(peak + c.opts.ReplicaCapacitySlack)
}

// replicasHeld counts the replicas on each broker (those a reassignment
// adds or removes among them).
func replicasHeld(im *metadata.Image) map[int32]int {
	held := map[int32]int{}
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				held[r]++
			}
		}
	}
	return held
}

// registeredCapacity is the replica capacity p registers: the run's
// (creationCapacity), or, with Options.ReplicaCapacityShrink, for the
// first node that restarts once its image holds every topic of the run
// (so that the run's creation is not refused), one below the replicas
// that image lists on it, kept for its later registrations.
func (c *Cluster) registeredCapacity(p *process) int32 {
	if !c.opts.ReplicaCapacityShrink || c.capacity == 0 {
		return c.capacity
	}
	if limit, ok := c.shrunk[p.n.id]; ok {
		return limit
	}
	if len(c.shrunk) > 0 || p.n.incarnation < 2 {
		return c.capacity
	}
	for _, req := range c.topicRequests() {
		if _, ok := p.image.Topic(req.Name); !ok {
			return c.capacity
		}
	}
	held := replicasHeld(p.image)[p.n.id]
	if held < 2 {
		return c.capacity
	}
	limit := int32(held - 1)
	if c.shrunk == nil {
		c.shrunk = map[int32]int32{}
	}
	c.shrunk[p.n.id] = limit
	c.check.stats.CapacityShrinks++
	p.n.tracef("restarted with a lower open-files limit: registers a replica capacity of %d, %d replicas listed on it", limit, held)
	return limit
}

// checkCapacity: no image of n's adds replicas to a broker beyond the
// capacity it registered. A broker may hold more only when it held that
// many as its registration took effect (its capacity shrank: Options.
// ReplicaCapacityShrink), and then no more than it did: the controller
// adds nothing to it (its count may only fall). So a broker over its
// limit is held to its count in the earliest image (of any node) that
// holds the same registration: a node replaying its log, or installing a
// snapshot, meets images of any age.
func (c *Cluster) checkCapacity(n *node, next *metadata.Image) {
	if c.capacity == 0 {
		return
	}
	now := replicasHeld(next)
	for _, b := range next.Brokers() {
		limit := int(b.ReplicaCapacity)
		if limit == 0 {
			continue
		}
		if c.opts.capacityUnderstated {
			limit--
		}
		reg := registration{b.ID, b.Epoch}
		first, seen := c.registered[reg]
		if !seen || next.Version() < first.version {
			if c.registered == nil {
				c.registered = map[registration]heldAt{}
			}
			first = heldAt{next.Version(), now[b.ID]}
			c.registered[reg] = first
		}
		if held := now[b.ID]; held > limit && held > first.held {
			c.violation("%s: broker %d holds %d replicas, more than the %d it can keep open (its registered replica capacity; it held %d at version %d, as epoch %d registered it)",
				n, b.ID, held, limit, first.held, first.version, b.Epoch)
			return
		}
	}
}

// registration is one broker's registration (its epoch).
type registration struct {
	id    int32
	epoch int64
}

// heldAt is a broker's replica count in the image of a version.
type heldAt struct {
	version int64
	held    int
}

// capacityConvergence: with the balancer on, no broker holds more
// replicas than its registered capacity while a partition listing it
// could move its replica to another unfenced broker with room (one not
// listed by the partition, holding fewer than its capacity): the
// balancer drains a broker whose capacity shrank where the others'
// capacities allow (balancer/capacity.go), and converges only then.
func (c *Cluster) capacityConvergence(ctl *process) string {
	if !c.opts.Balancer || c.capacity == 0 {
		return ""
	}
	im := ctl.image
	held := replicasHeld(im)
	room := func(id int32) bool {
		b, ok := im.Broker(id)
		return ok && !b.Fenced && !b.InControlledShutdown && (b.ReplicaCapacity == 0 || held[id] < int(b.ReplicaCapacity))
	}
	for _, b := range im.Brokers() {
		if b.ReplicaCapacity == 0 || held[b.ID] <= int(b.ReplicaCapacity) {
			continue
		}
		for _, t := range im.Topics() {
			for _, p := range t.Partitions {
				if !slices.Contains(p.Replicas, b.ID) {
					continue
				}
				for _, to := range im.Brokers() {
					if !slices.Contains(p.Replicas, to.ID) && room(to.ID) {
						return fmt.Sprintf("n%d holds %d replicas, more than its capacity %d, and n%d has room for %s-%d's", b.ID, held[b.ID], b.ReplicaCapacity, to.ID, t.Name, p.Index)
					}
				}
			}
		}
	}
	return ""
}

// capacityRefusal reports a reassignment refused for a broker's replica
// capacity.
func capacityRefusal(err error) bool {
	return errors.Is(err, kerr.InvalidReplicaAssignment) && strings.Contains(err.Error(), "open-files limit")
}
