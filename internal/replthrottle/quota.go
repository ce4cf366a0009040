package replthrottle

import (
	"slices"

	"github.com/skein-log/skein/internal/metadata"
)

// Topic config keys of the throttled-replicas lists (KIP-73).
const (
	LeaderReplicasKey   = "leader.replication.throttled.replicas"
	FollowerReplicasKey = "follower.replication.throttled.replicas"
)

// maxCachedLists bounds the parsed-list cache (two per topic).
const maxCachedLists = 2 * 10_000

// Quota is one broker's two replication quotas: the leader's over what it
// sends throttled followers, the follower's over what it fetches for its
// throttled replicas, with the rates the metadata image gives (Use) and
// the lists of its topics. internal/node wraps it in a lock and feeds it
// the wall clock; internal/sim feeds it the simulated one. Not safe for
// concurrent use.
type Quota struct {
	self     int32
	leader   *Bucket
	follower *Bucket
	// image is the one the rates were last read from.
	image *metadata.Image
	// leaderBytes and followerBytes count the throttled traffic.
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
	replicas Replicas
}

// NewQuota returns broker self's quotas at the given rates.
func NewQuota(self int32, leaderRate, followerRate int64) *Quota {
	return &Quota{self: self, leader: NewBucket(leaderRate), follower: NewBucket(followerRate), lists: map[listKey]cachedList{}}
}

// Use takes the rates from im, through rates, when im is not the image
// they were last read from.
func (q *Quota) Use(im *metadata.Image, rates func(*metadata.Image) (leader, follower int64)) {
	if im == nil || im == q.image {
		return
	}
	q.image = im
	l, f := rates(im)
	if l != q.leader.Rate() {
		q.leader.SetRate(l)
	}
	if f != q.follower.Rate() {
		q.follower.SetRate(f)
	}
}

// Stats are the rates in force and the throttled bytes so far, by side.
type Stats struct {
	LeaderRate, FollowerRate   int64
	LeaderBytes, FollowerBytes int64
}

// Stats reports the rates and counters.
func (q *Quota) Stats() Stats {
	return Stats{LeaderRate: q.leader.Rate(), FollowerRate: q.follower.Rate(), LeaderBytes: q.leaderBytes, FollowerBytes: q.followerBytes}
}

// LeaderLimited reports whether the leader's rate throttles anything at
// all: an unlimited one skips the per-partition lookups.
func (q *Quota) LeaderLimited() bool { return q.leader.limited() }

// throttled reports whether the replica of partition on broker replica is
// throttled by this broker's list key: the topic's list names
// partition:self and the replica is out of the ISR (Kafka throttles only
// replicas catching up, never an in-sync one).
func (q *Quota) throttled(im *metadata.Image, topic metadata.TopicID, partition, replica int32, key string) bool {
	tp, ok := im.TopicByID(topic)
	if !ok || partition < 0 || int(partition) >= len(tp.Partitions) {
		return false
	}
	value := tp.Configs[key]
	if value == "" {
		return false
	}
	lk := listKey{topic: topic, key: key}
	c, ok := q.lists[lk]
	if !ok || c.value != value {
		r, err := ParseReplicas(value)
		if err != nil {
			return false // validated when set; a bad value throttles nothing
		}
		if len(q.lists) > maxCachedLists {
			clear(q.lists)
		}
		c = cachedList{value: value, replicas: r}
		q.lists[lk] = c
	}
	return c.replicas.Has(partition, q.self) && !slices.Contains(tp.Partitions[partition].ISR, replica)
}

// LeaderThrottled reports whether this leader throttles what it sends the
// follower of partition: the leader's rate is limited, the topic's
// leader list names partition:self and the follower is out of the ISR.
func (q *Quota) LeaderThrottled(im *metadata.Image, topic metadata.TopicID, partition, follower int32) bool {
	return q.leader.limited() && q.throttled(im, topic, partition, follower, LeaderReplicasKey)
}

// FollowerThrottled reports whether this broker's replica of partition is
// throttled as a follower.
func (q *Quota) FollowerThrottled(im *metadata.Image, topic metadata.TopicID, partition int32) bool {
	return q.follower.limited() && q.throttled(im, topic, partition, q.self, FollowerReplicasKey)
}

// LeaderAllowance is how many bytes a throttled follower read may return
// at nowMs (Bucket.Allowance).
func (q *Quota) LeaderAllowance(nowMs int64) int {
	n, _ := q.leader.Allowance(nowMs)
	return n
}

// LeaderTook counts n bytes a throttled follower read returned.
func (q *Quota) LeaderTook(n int, nowMs int64) {
	q.leader.Take(n, nowMs)
	q.leaderBytes += int64(max(n, 0))
}

// FollowerWaitMs is how long from nowMs until the follower's quota allows
// a throttled fetch again: 0 if it does now.
func (q *Quota) FollowerWaitMs(nowMs int64) int64 { return q.follower.WaitMs(nowMs) }

// FollowerTook counts n bytes fetched for a throttled replica.
func (q *Quota) FollowerTook(n int, nowMs int64) {
	q.follower.Take(n, nowMs)
	q.followerBytes += int64(max(n, 0))
}
