package node

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

// metadataWaitMax bounds how long a Produce, Fetch or ListOffsets waits
// for this broker's metadata to catch up before it is served. Catching up
// takes a quorum round trip and opening a log, milliseconds; the bound
// only matters when the quorum has no leader.
const metadataWaitMax = 2 * time.Second

// A topic just created is named leader-first in the Metadata answer of
// whichever broker the client asked, as soon as that broker has applied
// the creation. The leader may not have: its metadata quorum member may
// not have learnt of the commit yet, or its reconcile loop may still be
// opening the partition's log. A client that does not retry (kafka-go's
// Conn) then fails on an UNKNOWN_TOPIC_OR_PARTITION or
// NOT_LEADER_OR_FOLLOWER that the cluster's own metadata contradicts.
// Kafka has the same window (its CreateTopics answers at the controller's
// commit) and its clients retry. Here the leader closes the window
// instead: a data request naming a topic its image lacks first asks the
// quorum for the leader's commit index (Raft's ReadIndex) and waits until
// it has applied it, so it knows every topic any broker had applied when
// the request arrived; one naming a partition the image says it leads but
// that is not leading yet waits for the reconcile loop to reach that
// image. Only then is the request served, with whatever the caught-up
// image says (a topic that really does not exist is still unknown). The
// reader of the connection waits, which keeps the connection's requests
// in order: a Produce behind it must not overtake it (Kafka handles one
// request per connection at a time anyway).

// metadataWaitFor is api.MetadataWaitFor on this broker's state.
func (b *Broker) metadataWaitFor(im *metadata.Image, body kmsg.Request) api.MetadataWait {
	return api.MetadataWaitFor(im, b.cfg.NodeID, b.reconciledVersion.Load() < im.Version(), func(id metadata.TopicID, index int32) bool {
		p := b.partition(id, index)
		return p != nil && p.isLeader()
	}, body)
}

// awaitMetadataFor holds a client's Produce, Fetch or ListOffsets until
// this broker's metadata has caught up with what the request names (see
// above), at most metadataWaitMax (a Produce: at most its own timeout).
// Requests on controller listeners (the metadata log's own fetches) never
// wait.
func (b *Broker) awaitMetadataFor(body kmsg.Request) {
	w := b.metadataWaitFor(b.Image(), body)
	if !w.Any() {
		return
	}
	bound := metadataWaitMax
	if p, ok := body.(*kmsg.ProduceRequest); ok && p.TimeoutMillis > 0 {
		bound = min(bound, time.Duration(p.TimeoutMillis)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(b.stopCtx, bound)
	defer cancel()
	b.metadataWaits.add(1)
	defer b.metadataWaits.add(-1)
	// A broker-only node has no quorum member to ask (b.quorum is nil):
	// it applies what its metadata fetch brings, a round trip after the
	// commit, and only waits for its reconcile loop.
	if w.CatchUp && b.quorum != nil {
		if index, err := b.quorum.ReadIndex(ctx); err == nil {
			_ = b.waitApplied(ctx, index)
		}
		w = b.metadataWaitFor(b.Image(), body)
	}
	if w.Reconcile {
		// On timeout the request is served with what the broker has.
		_ = b.waitReconciled(ctx, b.Image().Version())
	}
}

// waitApplied waits until the metadata quorum member has applied index.
func (b *Broker) waitApplied(ctx context.Context, index uint64) error {
	for {
		changed := b.quorum.AppliedChanged()
		if b.quorum.Applied() >= index {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// MetadataWaits is how many requests are being held for this broker's
// metadata to catch up, and a channel closed when that number next
// changes.
func (b *Broker) MetadataWaits() (int, <-chan struct{}) { return b.metadataWaits.get() }

// waitCount is a count with a channel closed whenever it changes.
type waitCount struct {
	mu      sync.Mutex
	n       int
	changed chan struct{}
}

func (c *waitCount) add(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += delta
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

func (c *waitCount) get() (int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.n, c.changed
}
