package sim

import (
	"slices"

	"github.com/skein-log/skein/internal/metadata"
)

// recoverLeaderless plays the operator after healing a write.caching run
// in which a machine lost power. A broker that restarts after a power loss
// leaves the ELRs of write.caching topics (controller.RegisterBroker): what
// it acknowledged may have been only in its page cache. A partition whose
// every ELR member did so is left with no clean candidate and stays
// leaderless by design, until an operator accepts the possible loss and
// enables unclean.leader.election.enable, as this does. Only runs whose
// checks already allow that loss (checker.strict is false) get here.
func (c *Cluster) recoverLeaderless() {
	if !c.opts.WriteCaching || !c.faults.powerLost {
		return
	}
	ctl := c.activeController()
	if ctl == nil || ctl == c.uncleanAskedOf {
		return
	}
	t, ok := ctl.image.Topic(topicName)
	if !ok || t.Configs[uncleanConfig] == "true" {
		return
	}
	stuck := slices.ContainsFunc(t.Partitions, func(p metadata.Partition) bool {
		return p.Leader == metadata.NoLeader && len(p.ISR) == 0 && len(p.ELR) == 0
	})
	if !stuck {
		return
	}
	c.uncleanAskedOf = ctl
	id, v := t.ID, "true"
	ctl.decide("operator enabling unclean leader election", func(im *metadata.Image) ([]metadata.Record, error) {
		return []metadata.Record{metadata.SetTopicConfig{TopicID: id, Key: uncleanConfig, Value: &v}}, nil
	}, func(err error) {
		if err != nil && c.uncleanAskedOf == ctl {
			c.uncleanAskedOf = nil // ask again
		}
	})
}

const uncleanConfig = "unclean.leader.election.enable"
