package api

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReplicaCapacityTag is the tagged field of a BrokerRegistration request in
// which a Skein broker says how many replicas it can keep open (its
// open-files limit less the descriptors it keeps free, over
// log.open.files.per.replica) and the limit that comes from, as two
// big-endian uint32s, so that the controller places no more on it
// (metadata.Broker.ReplicaCapacity). Kafka's request has no such field; a
// controller that does not know the tag ignores it, and a broker that does
// not send it is not limited.
const ReplicaCapacityTag = 0x5E13

// TagReplicaCapacity adds a replica capacity and the open-files limit it
// comes from to a registration's tagged fields; capacity <= 0 (not
// limited) adds nothing.
func TagReplicaCapacity(tags *kmsg.Tags, capacity, limit int32) {
	if capacity > 0 {
		b := binary.BigEndian.AppendUint32(nil, uint32(capacity))
		tags.Set(ReplicaCapacityTag, binary.BigEndian.AppendUint32(b, uint32(max(limit, 0))))
	}
}

// TaggedReplicaCapacity reads a registration's replica capacity and
// open-files limit, 0s (not limited) if absent or malformed.
func TaggedReplicaCapacity(tags kmsg.Tags) (capacity, limit int32) {
	tags.Each(func(key uint32, val []byte) {
		if key == ReplicaCapacityTag && len(val) == 8 {
			capacity = max(int32(binary.BigEndian.Uint32(val)), 0)
			limit = max(int32(binary.BigEndian.Uint32(val[4:])), 0)
		}
	})
	return capacity, limit
}
