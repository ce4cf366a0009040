package api

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReplicaCapacityTag is the tagged field of a BrokerRegistration request in
// which a Skein broker says how many replicas it can keep open (its
// open-files limit less the descriptors it keeps free, over
// log.open.files.per.replica), so that the controller places no more on it
// (metadata.Broker.ReplicaCapacity). Kafka's request has no such field; a
// controller that does not know the tag ignores it, and a broker that does
// not send it is not limited.
const ReplicaCapacityTag = 0x5E13

// TagReplicaCapacity adds a replica capacity to a registration's tagged
// fields; n <= 0 (not limited) adds nothing.
func TagReplicaCapacity(tags *kmsg.Tags, n int32) {
	if n > 0 {
		tags.Set(ReplicaCapacityTag, binary.BigEndian.AppendUint32(nil, uint32(n)))
	}
}

// TaggedReplicaCapacity reads a registration's replica capacity, 0 (not
// limited) if absent or malformed.
func TaggedReplicaCapacity(tags kmsg.Tags) int32 {
	var n int32
	tags.Each(func(key uint32, val []byte) {
		if key == ReplicaCapacityTag && len(val) == 4 {
			n = max(int32(binary.BigEndian.Uint32(val)), 0)
		}
	})
	return n
}
