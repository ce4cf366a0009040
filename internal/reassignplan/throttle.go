package reassignplan

import (
	"slices"

	"github.com/skein-log/skein/internal/replthrottle"
)

// Throttle is the throttled-replicas lists of one topic for a reassignment,
// as kafka-reassign-partitions --throttle sets them: the leader list names
// every current replica of a moving partition (any of them may lead while
// the new ones copy), the follower list the replicas being added.
type Throttle struct {
	Leader   string // leader.replication.throttled.replicas
	Follower string // follower.replication.throttled.replicas
}

// Throttles gives, by topic, the throttled-replicas lists for moving the
// partitions of current to target. A partition whose replicas are
// unchanged, or that only loses replicas, copies nothing and is not
// listed; a topic none of whose partitions copies is absent. The brokers
// are the ones whose rates matter: every current replica of a copying
// partition and every added one, sorted.
func Throttles(current, target []Assignment) (byTopic map[string]Throttle, brokers []int32) {
	leaders := map[string][]replthrottle.Replica{}
	followers := map[string][]replthrottle.Replica{}
	var order []string
	for _, a := range target {
		i := slices.IndexFunc(current, func(c Assignment) bool { return c.Topic == a.Topic && c.Partition == a.Partition })
		if i < 0 {
			continue
		}
		cur := current[i].Replicas
		var added []int32
		for _, r := range a.Replicas {
			if !slices.Contains(cur, r) {
				added = append(added, r)
			}
		}
		if len(added) == 0 {
			continue
		}
		if _, seen := leaders[a.Topic]; !seen {
			order = append(order, a.Topic)
		}
		for _, r := range cur {
			leaders[a.Topic] = append(leaders[a.Topic], replthrottle.Replica{Partition: a.Partition, Broker: r})
			brokers = append(brokers, r)
		}
		for _, r := range added {
			followers[a.Topic] = append(followers[a.Topic], replthrottle.Replica{Partition: a.Partition, Broker: r})
			brokers = append(brokers, r)
		}
	}
	byTopic = make(map[string]Throttle, len(order))
	for _, topic := range order {
		byTopic[topic] = Throttle{Leader: replthrottle.Format(leaders[topic]), Follower: replthrottle.Format(followers[topic])}
	}
	slices.Sort(brokers)
	return byTopic, slices.Compact(brokers)
}
