package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// maxNamedPartitions bounds how many partitions a refusal names, so the
// error message stays short for a broker holding thousands of replicas.
const maxNamedPartitions = 10

// UnregisterBroker decides an UnregisterBroker request (key 64, KIP-500 /
// KIP-631): the broker's registration is removed with an UnregisterBroker
// record, after it is fenced and has left every ISR (FenceBroker), as
// Kafka's controller does, so no partition keeps a leader or an in-sync
// replica that is no longer registered. An unknown id is
// BROKER_ID_NOT_REGISTERED.
//
// Skein refuses, with INVALID_REQUEST naming the partitions, to unregister
// a broker that is not fenced (still running, heartbeating) while any
// partition lists it as a replica, adding or removing replicas included:
// its replicas may be the only up-to-date copies, and dropping a live
// holder's registration would drop them from their ISRs and lose what only
// they hold. Move them off first (skein broker decommission). A fenced
// broker (stopped, or its session expired) holding replicas may be
// unregistered, which is how a broker whose machine is gone is removed; it
// keeps its ELR memberships, so if it ever comes back it is judged as any
// broker returning from an unclean stop (RegisterBroker) rather than
// having its committed records thrown away here.
func UnregisterBroker(im *metadata.Image, id int32) ([]metadata.Record, error) {
	b, ok := im.Broker(id)
	if !ok {
		return nil, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
	}
	if held := PartitionsWithReplica(im, id); len(held) > 0 && !b.Fenced {
		return nil, errorf(kerr.InvalidRequest, "broker %d is running and still holds replicas of %d partitions (%s); move them off first (skein broker decommission) or stop the broker", id, len(held), nameSome(held))
	}
	recs, err := FenceBroker(im, id)
	if err != nil {
		return nil, err
	}
	return append(recs, metadata.UnregisterBroker{ID: id}), nil
}

// PartitionsWithReplica lists, as topic-partition names sorted by topic and
// partition, every partition whose replicas (during a reassignment the
// union of target and original) include broker id.
func PartitionsWithReplica(im *metadata.Image, id int32) []string {
	var held []string
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				held = append(held, fmt.Sprintf("%s-%d", t.Name, p.Index))
			}
		}
	}
	return held
}

func nameSome(names []string) string {
	if len(names) <= maxNamedPartitions {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxNamedPartitions], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamedPartitions)
}
