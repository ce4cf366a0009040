package metadata

import "slices"

// A broker acts on an image (leads partitions, follows leaders, coordinates
// groups, serves clients) only once the image is new enough. A restarted
// broker first rebuilds an image from its own metadata log (a voter) or
// from a controller's snapshot and entries (a broker-only node); until that
// image has caught up it may still say this broker leads partitions the
// controller moved away while it was down. Kafka keeps such a broker in
// RECOVERY until its metadata offset reaches the one the controller gives
// for its registration; the rule here is the same, read off the image: the
// registration that gave this incarnation its epoch is committed after
// everything the quorum had committed when the broker registered, so an
// image that holds it is at least that new.

// CaughtUpFor reports whether im is new enough for broker id, registered at
// epoch (negative while not registered), to act on: it holds that very
// registration. An image that holds an older epoch is a stale replay from
// before the registration; one that holds a newer epoch means another
// registration of this id superseded this incarnation's.
func (im *Image) CaughtUpFor(id int32, epoch int64) bool {
	if epoch < 0 {
		return false
	}
	br, ok := im.brokers[id]
	return ok && br.Epoch == epoch
}

// ReplicaRole is what a broker does with one of its partition replicas.
type ReplicaRole uint8

const (
	// RoleNone keeps the replica's log open and does nothing with it: no
	// leadership, no fetching. A replica whose broker has not caught up with
	// metadata, or whose partition has no leader, is in it.
	RoleNone ReplicaRole = iota
	// RoleLeader leads the partition in the image's leader epoch.
	RoleLeader
	// RoleFollower fetches from the image's leader.
	RoleFollower
)

func (r ReplicaRole) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	default:
		return "none"
	}
}

// ReplicaRole decides the role broker id, registered at epoch, takes for its
// replica of p, an entry of im: none before the broker has caught up with
// metadata (CaughtUpFor), then whatever im says.
func (im *Image) ReplicaRole(id int32, epoch int64, p Partition) ReplicaRole {
	switch {
	case !slices.Contains(p.Replicas, id) || !im.CaughtUpFor(id, epoch):
		return RoleNone
	case p.Leader == id:
		return RoleLeader
	case p.Leader == NoLeader:
		return RoleNone
	default:
		return RoleFollower
	}
}

// Retired reports whether broker id, registered at epoch, may delete its
// replica of partition index of topic: im is caught up for it (CaughtUpFor)
// and no longer lists it as a replica there (the partition was reassigned
// away, or the topic deleted; KRaft's StopReplica with delete). A stale
// replay never retires a replica: it may be older than the reassignment
// that added this broker, which may since have made it an ISR member
// holding committed records no other broker holds.
func (im *Image) Retired(id int32, epoch int64, topic TopicID, index int32) bool {
	return im.CaughtUpFor(id, epoch) && !im.Lists(id, topic, index)
}

// Lists reports whether im lists broker id as a replica of partition index
// of topic. A broker runs exactly the replicas its image lists; Retired
// says when one it no longer runs may also be deleted.
func (im *Image) Lists(id int32, topic TopicID, index int32) bool {
	t, ok := im.topicsByID[topic]
	if !ok {
		return false
	}
	p, ok := t.Partition(index)
	return ok && slices.Contains(p.Replicas, id)
}
