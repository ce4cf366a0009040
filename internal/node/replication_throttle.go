package node

import (
	"sync"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/metrics"
	"github.com/skein-log/skein/internal/replthrottle"
)

// replicationThrottle is a thin lock over this broker's replication
// quotas (replthrottle.Quota), fed the wall clock. The rates are
// leader/follower.replication.throttled.rate as the metadata image gives
// them (per-broker dynamic, cluster-default dynamic, static, default:
// config.ReplicationThrottleRates), read again whenever a newer image is
// seen, so an IncrementalAlterConfigs applies without a restart.
type replicationThrottle struct {
	static *config.Broker

	mu sync.Mutex
	q  *replthrottle.Quota
}

func newReplicationThrottle(cfg *config.Broker) *replicationThrottle {
	return &replicationThrottle{
		static: cfg,
		q:      replthrottle.NewQuota(cfg.NodeID, cfg.LeaderReplicationThrottledRate, cfg.FollowerReplicationThrottledRate),
	}
}

// useLocked takes the rates from im. Call with mu held.
func (t *replicationThrottle) useLocked(im *metadata.Image) {
	t.q.Use(im, func(im *metadata.Image) (int64, int64) { return config.ReplicationThrottleRates(t.static, im) })
}

// stats is what the metrics report: the rates in force with image im and
// the throttled bytes so far.
func (t *replicationThrottle) stats(im *metadata.Image) metrics.ReplicationThrottle {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.useLocked(im)
	s := t.q.Stats()
	return metrics.ReplicationThrottle{LeaderRate: s.LeaderRate, FollowerRate: s.FollowerRate, LeaderBytes: s.LeaderBytes, FollowerBytes: s.FollowerBytes}
}

// leaderRead is the replica.Throttle of one follower fetch read on the
// leader, or nil when nothing is throttled.
func (t *replicationThrottle) leaderRead(im *metadata.Image, w *fetchWaiter) *leaderRead {
	if w.params.ReplicaID < 0 {
		return nil
	}
	t.mu.Lock()
	t.useLocked(im)
	limited := t.q.LeaderLimited()
	t.mu.Unlock()
	if !limited {
		return nil
	}
	return &leaderRead{t: t, im: im, w: w, nowMs: time.Now().UnixMilli()}
}

type leaderRead struct {
	t     *replicationThrottle
	im    *metadata.Image
	w     *fetchWaiter
	nowMs int64
}

// Allowance is replica.Throttle.Allowance.
func (r *leaderRead) Allowance(i int) (int, bool) {
	fp := r.w.params.Partitions[i]
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if !r.t.q.LeaderThrottled(r.im, fp.Topic, fp.Partition, r.w.params.ReplicaID) {
		return 0, false
	}
	return r.t.q.LeaderAllowance(r.nowMs), true
}

// Took is replica.Throttle.Took.
func (r *leaderRead) Took(_ int, n int) {
	r.t.mu.Lock()
	r.t.q.LeaderTook(n, r.nowMs)
	r.t.mu.Unlock()
}

// followerThrottled reports whether this broker's replica of partition is
// throttled as a follower.
func (t *replicationThrottle) followerThrottled(im *metadata.Image, topic metadata.TopicID, partition int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.useLocked(im)
	return t.q.FollowerThrottled(im, topic, partition)
}

// followerHold reports whether the follower's quota is spent at now, and
// how long until it is not.
func (t *replicationThrottle) followerHold(im *metadata.Image, now time.Time) (hold bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.useLocked(im)
	ms := t.q.FollowerWaitMs(now.UnixMilli())
	return ms > 0, time.Duration(ms) * time.Millisecond
}

// followerTook counts n bytes fetched for a throttled replica.
func (t *replicationThrottle) followerTook(n int, now time.Time) {
	t.mu.Lock()
	t.q.FollowerTook(n, now.UnixMilli())
	t.mu.Unlock()
}
