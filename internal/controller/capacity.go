package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// A broker keeps every replica's segment files open, so the replicas it can
// hold are bounded by its open-files limit (RLIMIT_NOFILE). It says how many
// when it registers (metadata.Broker.ReplicaCapacity: the limit, less the
// descriptors it keeps free, over log.open.files.per.replica), and the
// controller refuses a creation or a partition increase
// (INVALID_PARTITIONS, as Redpanda refuses one beyond
// topic_fds_per_partition) or a reassignment (INVALID_REPLICA_ASSIGNMENT)
// that would place more replicas on a broker than that, with the broker
// and the limit named, rather than accept partitions no broker can open.
// Kafka has no such check: its brokers fail the log's open with "Too many
// open files" and take the log directory offline. Placement itself stays
// Kafka's round robin: a broker with room is not preferred over a full one,
// so a request is answered the same whatever the load, and one that is
// refused names what to raise.

// capacityAdvice is the end of every refusal for a broker's replica
// capacity.
const capacityAdvice = "raise its open-files limit (ulimit -n; LimitNOFILE= in a systemd unit) and restart it, or place fewer replicas on it"

// replicaCounts is how many replicas each broker stating a ReplicaCapacity
// holds; nil when none states one (nothing to check).
type replicaCounts map[int32]int

// countLimited counts the replicas (every one listed, those being added
// and removed by a reassignment too) of each broker that states a
// ReplicaCapacity.
func countLimited(im *metadata.Image) replicaCounts {
	var held replicaCounts
	for _, b := range im.Brokers() {
		if b.ReplicaCapacity > 0 {
			if held == nil {
				held = replicaCounts{}
			}
			held[b.ID] = 0
		}
	}
	if held == nil {
		return nil
	}
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if n, ok := held[r]; ok {
					held[r] = n + 1
				}
			}
		}
	}
	return held
}

// check refuses, with code and its message starting with prefix, adding replicas to brokers (adding[id] more on
// broker id) if one would then hold more than its ReplicaCapacity.
func (held replicaCounts) check(im *metadata.Image, adding map[int32]int, code *kerr.Error, prefix string) error {
	if held == nil {
		return nil
	}
	ids := make([]int32, 0, len(adding))
	for id := range adding {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b, ok := im.Broker(id)
		if !ok || b.ReplicaCapacity <= 0 {
			continue
		}
		if total := held[id] + adding[id]; total > int(b.ReplicaCapacity) {
			limit := ""
			if b.OpenFilesLimit > 0 {
				limit = fmt.Sprintf(" of %d", b.OpenFilesLimit)
			}
			return errorf(code,
				"%sbroker %d would hold %d replicas (%d now, %d more), more than the %d its open-files limit (RLIMIT_NOFILE)%s lets it keep open (log.open.files.per.replica descriptors each, some kept free): %s",
				prefix, id, total, held[id], adding[id], b.ReplicaCapacity, limit, capacityAdvice)
		}
	}
	return nil
}

// add counts adding as held.
func (held replicaCounts) add(adding map[int32]int) {
	for id, n := range adding {
		if _, ok := held[id]; ok {
			held[id] += n
		}
	}
}

// checkReplicaCapacity refuses new partitions parts, with code, if they
// would place more replicas on a broker than its ReplicaCapacity.
func checkReplicaCapacity(im *metadata.Image, parts []metadata.Partition, code *kerr.Error) error {
	return countLimited(im).check(im, replicasPerBroker(parts), code, "")
}

// replicasPerBroker counts the replicas of parts on each broker.
func replicasPerBroker(parts []metadata.Partition) map[int32]int {
	out := map[int32]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			out[r]++
		}
	}
	return out
}
