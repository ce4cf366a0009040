package node

import (
	"context"
	"time"

	"github.com/skein-log/skein/internal/metadata"
)

// openingWait bounds how long a request waits for the reconcile loop to
// open a partition this broker's image already names it a replica of.
const openingWait = 2 * time.Second

// opening reports whether this broker's image has it hold a replica of
// the partition that the reconcile loop has not opened yet, and returns
// that image's version. A topic just created is the common case: the
// Metadata answer another broker gave names this one its leader as soon
// as the creation is committed, and a client such as kafka-go's Conn,
// which does not retry, sends its first Produce or Fetch here while the
// partition's log is still being created. Answering NOT_LEADER then
// (what partitionError says) sends such clients away with an error the
// cluster's own metadata contradicts.
func (b *Broker) opening(id metadata.TopicID, index int32) (int64, bool) {
	if b.partition(id, index) != nil {
		return 0, false
	}
	im := b.Image()
	t, ok := im.TopicByID(id)
	if !ok {
		return 0, false
	}
	p, ok := t.Partition(index)
	if !ok || p.Leader != b.cfg.NodeID {
		return 0, false
	}
	b.imageCond.L.Lock()
	behind := b.reconciled < im.Version()
	b.imageCond.L.Unlock()
	return im.Version(), behind
}

// awaitOpening waits, when one of the n partitions key names is being opened, until
// the reconcile loop has caught up with the image that names it (at most
// openingWait), so the request is then answered by the opened partition.
// It waits on the connection's reader, which keeps the requests of the
// connection in order (a Produce queued behind this one must not overtake
// it); the wait is as long as creating a log takes.
func (b *Broker) awaitOpening(n int, key func(i int) partKey) {
	var version int64
	for i := range n {
		if k := key(i); b.partition(k.topic, k.index) != nil {
			continue
		} else if v, ok := b.opening(k.topic, k.index); ok {
			version = max(version, v)
		}
	}
	if version == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), openingWait)
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// On timeout the partitions answer what they say then.
	_ = b.waitReconciled(ctx, version)
}
