package sim

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/replthrottle"
)

// The replication throttle (KIP-73) runs in the simulated brokers with the
// core internal/node runs (replthrottle.Quota), on the simulated clock,
// its rates from the image (config.ReplicationThrottleRates over the
// ConfigRecords). With FaultMix.Throttle the operator throttles every
// other reassignment as kafka-reassign-partitions --throttle does, the
// rates as dynamic broker configs (a cluster default and a per-broker
// value, so both precedence levels apply) and "*" lists on the run's
// topic, and removes it all once healed (--verify); convergence waits for
// that.
const (
	simThrottleDefaultRate   = 64 << 10
	simThrottlePerBrokerRate = 32 << 10
)

// useThrottle takes the throttle's rates from the process's image.
func (p *process) useThrottle() {
	p.throttle.Use(p.image, func(im *metadata.Image) (int64, int64) { return config.ReplicationThrottleRates(p.cfg, im) })
}

// leaderThrottle is the replica.Throttle of one follower fetch read, nil
// when nothing is throttled.
func (w *fetchWaiter) leaderThrottle() *simLeaderRead {
	p := w.p
	if w.params.ReplicaID < 0 {
		return nil
	}
	p.useThrottle()
	if !p.throttle.LeaderLimited() {
		return nil
	}
	return &simLeaderRead{w: w, nowMs: p.n.c.nowMs()}
}

type simLeaderRead struct {
	w     *fetchWaiter
	nowMs int64
}

// Allowance is replica.Throttle.Allowance.
func (r *simLeaderRead) Allowance(i int) (int, bool) {
	p, fp := r.w.p, r.w.params.Partitions[i]
	if !p.throttle.LeaderThrottled(p.image, fp.Topic, fp.Partition, r.w.params.ReplicaID) {
		return 0, false
	}
	return p.throttle.LeaderAllowance(r.nowMs), true
}

// Took is replica.Throttle.Took.
func (r *simLeaderRead) Took(_ int, n int) {
	r.w.p.throttle.LeaderTook(n, r.nowMs)
	r.w.p.n.c.check.stats.ThrottledBytes += n
}

// followerHold is the follower's throttle for the next fetch: nil when its
// quota is not spent, else which replicas to leave out and for how long.
func (p *process) followerHold() (func(*replica) bool, time.Duration) {
	p.useThrottle()
	ms := p.throttle.FollowerWaitMs(p.n.c.nowMs())
	if ms <= 0 {
		return nil, 0
	}
	im := p.image
	return func(r *replica) bool { return p.throttle.FollowerThrottled(im, r.id, r.index) }, time.Duration(ms) * time.Millisecond
}

// throttleRecords are the operator's --execute --throttle: both rates as
// the cluster default and, lower, for broker perBroker; "*" lists.
func throttleRecords(topicID metadata.TopicID, perBroker int32) []metadata.Record {
	def, one, all := strconv.Itoa(simThrottleDefaultRate), strconv.Itoa(simThrottlePerBrokerRate), "*"
	var recs []metadata.Record
	for _, k := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
		recs = append(recs,
			metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: metadata.ClusterDefaultBroker, Name: k, Value: &def},
			metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: strconv.Itoa(int(perBroker)), Name: k, Value: &one})
	}
	for _, k := range []string{replthrottle.LeaderReplicasKey, replthrottle.FollowerReplicasKey} {
		recs = append(recs, metadata.SetTopicConfig{TopicID: topicID, Key: k, Value: &all})
	}
	return recs
}

// unthrottleRecords delete every dynamic broker config and the run's
// topic's lists (--verify's clearing), none when nothing is left.
func unthrottleRecords(im *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, res := range im.BrokerConfigResources() {
		for _, k := range slices.Sorted(maps.Keys(im.BrokerConfigs(res))) { // a run replays bit for bit
			recs = append(recs, metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: res, Name: k})
		}
	}
	if t, ok := im.Topic(topicName); ok {
		for _, k := range []string{replthrottle.LeaderReplicasKey, replthrottle.FollowerReplicasKey} {
			if _, set := t.Configs[k]; set {
				recs = append(recs, metadata.SetTopicConfig{TopicID: t.ID, Key: k})
			}
		}
	}
	return recs
}

// throttle has the active controller throttle the reassignment starting,
// every other one, with FaultMix.Throttle.
func (c *Cluster) throttle(ctl *process, t *metadata.Topic, target []int32) {
	if !c.opts.Faults.Throttle || c.check.stats.Reassignments%2 == 0 || len(target) == 0 {
		return
	}
	if t.Configs[replthrottle.LeaderReplicasKey] != "" {
		return // already throttled
	}
	c.check.stats.Throttles++
	recs := throttleRecords(t.ID, target[0])
	c.tracef("OP throttle the reassignments at %d B/s (broker %d: %d B/s)", simThrottleDefaultRate, target[0], simThrottlePerBrokerRate)
	ctl.decide("operator throttling reassignments", func(*metadata.Image) ([]metadata.Record, error) { return recs, nil }, func(err error) {
		if err != nil {
			c.tracef("OP throttle: %v", err)
		}
	})
}

// removeThrottle is the operator's --verify once healed: it asks the
// active controller to delete the throttle until its image has none.
func (c *Cluster) removeThrottle() {
	if !c.opts.Faults.Throttle {
		return
	}
	ctl := c.activeController()
	if ctl == nil || len(unthrottleRecords(ctl.image)) == 0 {
		return
	}
	ctl.decide("operator removing the throttle", func(im *metadata.Image) ([]metadata.Record, error) {
		return unthrottleRecords(im), nil
	}, func(error) {})
}

// throttleReport is why the run has not converged for its throttle: the
// active controller's image still holds some of it.
func (c *Cluster) throttleReport(ctl *process) string {
	if !c.opts.Faults.Throttle {
		return ""
	}
	if n := len(unthrottleRecords(ctl.image)); n > 0 {
		return "the replication throttle is not removed yet (" + strconv.Itoa(n) + " configs left)"
	}
	return ""
}
