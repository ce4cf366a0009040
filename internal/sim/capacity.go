package sim

import (
	"errors"
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
// meet full nodes; checkCapacity requires that no node ever holds more.

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

// checkCapacity: no image of n's places more replicas on a broker than
// the capacity it registered.
func (c *Cluster) checkCapacity(n *node, im *metadata.Image) {
	limit := int(c.capacity)
	if limit == 0 {
		return
	}
	if c.opts.capacityUnderstated {
		limit--
	}
	for id, held := range replicasHeld(im) {
		if held > limit {
			c.violation("%s: broker %d holds %d replicas, more than the %d it can keep open (its registered replica capacity)", n, id, held, limit)
			return
		}
	}
}

// capacityRefusal reports a reassignment refused for a broker's replica
// capacity.
func capacityRefusal(err error) bool {
	return errors.Is(err, kerr.InvalidReplicaAssignment) && strings.Contains(err.Error(), "open-files limit")
}
