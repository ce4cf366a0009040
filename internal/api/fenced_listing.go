package api

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

// A broker fenced moments ago stays in a Metadata answer's broker list
// for a short while (FencedListedMs) when a partition in the answer has a
// replica on it, though it leads nothing and is listed among that
// partition's offline replicas.
//
// Why: the controller fences a dead broker and moves its leaderships in
// one metadata entry, so the first Metadata answer naming the new leaders
// is also the first that leaves the dead broker out. librdkafka (2.10 and
// later purge brokers missing from metadata) then decommissions that
// broker's handle while it moves the partition to the new leader, and the
// decommission wins: the partition, and every record queued for it, waits
// on the internal broker until librdkafka's next one-second topic scan
// asks again. Failover with librdkafka's defaults measured 0.7 s median
// and up to 2 s over 20 kill -9 of the leader that way
// (docs/performance.md, Failover). Listed a little longer, the broker is
// dropped by a later answer, when nothing is delegated to it any more.
// Kafka itself lists a dead broker for its whole session timeout (9 s by
// default), until it fences it; this is far shorter.
//
// Only where a partition refers to it: an answer without such partitions
// has nothing to move, and a client that learns a dead broker's address
// from it keeps dialing it when it already holds that broker as a group
// coordinator (franz-go re-resolves a coordinator whose broker is missing
// from metadata, not one it fails to dial).
//
// FencedListedMs must outlast the time between a fencing and a client's
// first Metadata answer after it (librdkafka asks at once when its
// connection breaks and then at least every second, franz-go when a
// produce fails), with room for a loaded machine.
const FencedListedMs = 5_000

// FenceTimes remembers when this broker's image first showed each broker
// fenced, on the runtime's clock (node: wall clock, sim: simulated time).
// The runtime observes every image it installs; the Metadata handler asks
// Listed. Not safe for concurrent use: the runtime guards it.
type FenceTimes struct {
	at map[int32]int64
}

// Observe records the brokers next shows fenced and prev did not, at
// nowMs, and forgets those next shows unfenced or no longer registered.
// prev may be nil (the first image).
func (f *FenceTimes) Observe(prev, next *metadata.Image, nowMs int64) {
	for id := range f.at {
		if b, ok := next.Broker(id); !ok || !b.Fenced {
			delete(f.at, id)
		}
	}
	for _, b := range next.Brokers() {
		if !b.Fenced {
			continue
		}
		if _, known := f.at[b.ID]; known {
			continue
		}
		if prev == nil {
			continue // fenced before this runtime looked: not recent
		}
		if pb, ok := prev.Broker(b.ID); ok && !pb.Fenced {
			if f.at == nil {
				f.at = make(map[int32]int64)
			}
			f.at[b.ID] = nowMs
		}
	}
}

// FencedAtMs is when broker id was seen fenced, if that was recorded and
// it is still fenced.
func (f *FenceTimes) FencedAtMs(id int32) (int64, bool) {
	ms, ok := f.at[id]
	return ms, ok
}

// recentlyFencedIn is the fenced brokers a Metadata answer carrying
// topics still lists at nowMs: those fenced less than FencedListedMs ago
// that hold a replica of one of its partitions.
func recentlyFencedIn(topics []kmsg.MetadataResponseTopic, fencedAtMs func(int32) (int64, bool), nowMs int64) func(int32) bool {
	return func(id int32) bool {
		at, ok := fencedAtMs(id)
		if !ok || nowMs-at >= FencedListedMs {
			return false
		}
		for _, t := range topics {
			for _, p := range t.Partitions {
				if slices.Contains(p.Replicas, id) {
					return true
				}
			}
		}
		return false
	}
}
