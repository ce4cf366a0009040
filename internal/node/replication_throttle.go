package node

import (
	"slices"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/metrics"
	"github.com/skein-log/skein/internal/replthrottle"
)

// Topic config keys of the throttled-replicas lists (KIP-73).
const (
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

// Broker property names of the two rates, dynamic broker configs.
const (
	leaderThrottledRate   = "leader.replication.throttled.rate"
	followerThrottledRate = "follower.replication.throttled.rate"
)

// replicationThrottle is this broker's two replication quotas: the
// leader's over what it sends throttled followers, the follower's over
// what it fetches for its throttled replicas. A thin lock over the
// replthrottle core. The rates are leader/follower.replication.throttled.rate
// as the metadata image gives them (per-broker dynamic, cluster-default
// dynamic, static, default: config.DynamicLong), read again whenever a
// newer image is seen, so an IncrementalAlterConfigs applies without a
// restart.
type replicationThrottle struct {
	self   int32
	static *config.Broker

	mu sync.Mutex
	// image is the one the rates were last read from.
	image    *metadata.Image
	leader   *replthrottle.Bucket
	follower *replthrottle.Bucket
	// leaderBytes and followerBytes count the throttled traffic, for
	// skein_replication_throttled_bytes_total.
	leaderBytes, followerBytes int64
	// lists caches each topic's parsed lists by config value, so a fetch
	// does not parse them per partition.
	lists map[listKey]cachedList
}

type listKey struct {
	topic metadata.TopicID
	key   string
}

type cachedList struct {
	value    string
	replicas replthrottle.Replicas
}

func newReplicationThrottle(cfg *config.Broker) *replicationThrottle {
	return &replicationThrottle{
		self:     cfg.NodeID,
		static:   cfg,
		leader:   replthrottle.NewBucket(cfg.LeaderReplicationThrottledRate),
		follower: replthrottle.NewBucket(cfg.FollowerReplicationThrottledRate),
		lists:    map[listKey]cachedList{},
	}
}

// refreshLocked takes the rates from im when it is not the image they
// were last read from. Call with mu held.
func (t *replicationThrottle) refreshLocked(im *metadata.Image) {
	if im == nil || im == t.image {
		return
	}
	t.image = im
	d := config.DynamicOf(im, t.self)
	for _, r := range []struct {
		name   string
		bucket *replthrottle.Bucket
	}{{leaderThrottledRate, t.leader}, {followerThrottledRate, t.follower}} {
		rate, err := config.DynamicLong(t.static, d, r.name)
		if err != nil {
			continue // a registry bug; the rate stays as it was
		}
		if rate != r.bucket.Rate() {
			r.bucket.SetRate(rate)
		}
	}
}

// stats is what the metrics report: the rates in force with image im and
// the throttled bytes so far.
func (t *replicationThrottle) stats(im *metadata.Image) metrics.ReplicationThrottle {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refreshLocked(im)
	return metrics.ReplicationThrottle{
		LeaderRate: t.leader.Rate(), FollowerRate: t.follower.Rate(),
		LeaderBytes: t.leaderBytes, FollowerBytes: t.followerBytes,
	}
}

// limits reports whether the bucket throttles anything at all: an
// unlimited one skips the per-partition lookups.
func limits(b *replthrottle.Bucket) bool {
	return b.Rate() > 0 && b.Rate() != replthrottle.Unlimited
}

// throttled reports whether the replica of partition on broker replica is
// throttled by this broker's list key: the topic's list names
// partition:self and the replica is out of the ISR (Kafka throttles only
// replicas catching up, never an in-sync one). Call with mu held.
func (t *replicationThrottle) throttledLocked(im *metadata.Image, topic metadata.TopicID, partition, replica int32, key string) bool {
	tp, ok := im.TopicByID(topic)
	if !ok || partition < 0 || int(partition) >= len(tp.Partitions) {
		return false
	}
	value := tp.Configs[key]
	if value == "" {
		return false
	}
	lk := listKey{topic: topic, key: key}
	c, ok := t.lists[lk]
	if !ok || c.value != value {
		r, err := replthrottle.ParseReplicas(value)
		if err != nil {
			return false // validated when set; a bad value throttles nothing
		}
		if len(t.lists) > maxThrottleLists {
			clear(t.lists)
		}
		c = cachedList{value: value, replicas: r}
		t.lists[lk] = c
	}
	return c.replicas.Has(partition, t.self) && !slices.Contains(tp.Partitions[partition].ISR, replica)
}

// maxThrottleLists bounds the parsed-list cache (two per topic).
const maxThrottleLists = 2 * 10_000

// leaderRead is the replica.Throttle of one follower fetch read on the
// leader, or nil when nothing is throttled.
func (t *replicationThrottle) leaderRead(im *metadata.Image, w *fetchWaiter) *leaderRead {
	if w.params.ReplicaID < 0 {
		return nil
	}
	t.mu.Lock()
	t.refreshLocked(im)
	limited := limits(t.leader)
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
	if !r.t.throttledLocked(r.im, fp.Topic, fp.Partition, r.w.params.ReplicaID, leaderThrottledReplicas) {
		return 0, false
	}
	n, _ := r.t.leader.Allowance(r.nowMs)
	return n, true
}

// Took is replica.Throttle.Took.
func (r *leaderRead) Took(_ int, n int) {
	r.t.mu.Lock()
	r.t.leader.Take(n, r.nowMs)
	r.t.leaderBytes += int64(n)
	r.t.mu.Unlock()
}

// followerThrottled reports whether this broker's replica of partition is
// throttled as a follower.
func (t *replicationThrottle) followerThrottled(im *metadata.Image, topic metadata.TopicID, partition int32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refreshLocked(im)
	if !limits(t.follower) {
		return false
	}
	return t.throttledLocked(im, topic, partition, t.self, followerThrottledReplicas)
}

// followerHold reports whether the follower's quota is spent at now, and
// how long until it is not.
func (t *replicationThrottle) followerHold(im *metadata.Image, now time.Time) (hold bool, wait time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refreshLocked(im)
	ms := t.follower.WaitMs(now.UnixMilli())
	return ms > 0, time.Duration(ms) * time.Millisecond
}

// followerTook counts n bytes fetched for a throttled replica.
func (t *replicationThrottle) followerTook(n int, now time.Time) {
	t.mu.Lock()
	t.follower.Take(n, now.UnixMilli())
	t.followerBytes += int64(n)
	t.mu.Unlock()
}
