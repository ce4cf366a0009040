package api

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

// PartitionName is one partition as a request names it: by topic name,
// or by topic id (Produce v13, Fetch v13+), and index.
type PartitionName struct {
	Topic     string
	TopicID   [16]byte
	ByID      bool
	Partition int32
}

// EachDataPartition calls fn for every partition a Produce, Fetch or
// ListOffsets request names, in request order, until fn returns false; it
// names none for other requests. These are the requests a partition's
// leader serves from its own log, so they are the ones that can reach a
// leader before it has applied the metadata naming it leader (a topic
// just created, named in another broker's Metadata answer). Fetch's
// forgotten topics are not named: nothing is read from them.
func EachDataPartition(body kmsg.Request, fn func(PartitionName) bool) {
	switch req := body.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range req.Topics {
			if !eachPartition(t.Topic, t.TopicID, req.Version >= 13, len(t.Partitions), func(i int) int32 { return t.Partitions[i].Partition }, fn) {
				return
			}
		}
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			if !eachPartition(t.Topic, t.TopicID, req.Version >= 13, len(t.Partitions), func(i int) int32 { return t.Partitions[i].Partition }, fn) {
				return
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range req.Topics {
			if !eachPartition(t.Topic, [16]byte{}, false, len(t.Partitions), func(i int) int32 { return t.Partitions[i].Partition }, fn) {
				return
			}
		}
	}
}

// eachPartition calls fn for the n partitions of one topic of a request
// (index gives the i-th partition's index) and reports whether fn wants
// more.
func eachPartition(topic string, id [16]byte, byID bool, n int, index func(int) int32, fn func(PartitionName) bool) bool {
	for i := range n {
		if !fn(PartitionName{Topic: topic, TopicID: id, ByID: byID, Partition: index(i)}) {
			return false
		}
	}
	return true
}

// MetadataWait is what a data request must wait for on a broker whose
// metadata may lag the cluster's before it is served.
type MetadataWait struct {
	// CatchUp: the request names a topic the image lacks; the broker
	// first catches up with the quorum's commit index.
	CatchUp bool
	// Reconcile: the request names a partition the image says this
	// broker leads, which its runtime has not made leader yet.
	Reconcile bool
}

// Any reports whether there is anything to wait for.
func (w MetadataWait) Any() bool { return w.CatchUp || w.Reconcile }

// MetadataWaitFor decides what body waits for on broker self with image
// im. reconcileBehind says the runtime has not yet applied im to its
// partitions; only then is leading (does this broker lead the partition
// now) asked, so the common case costs a map lookup per named topic.
func MetadataWaitFor(im *metadata.Image, self int32, reconcileBehind bool, leading func(metadata.TopicID, int32) bool, body kmsg.Request) MetadataWait {
	var w MetadataWait
	EachDataPartition(body, func(n PartitionName) bool {
		var (
			t  *metadata.Topic
			ok bool
		)
		if n.ByID {
			t, ok = im.TopicByID(metadata.TopicID(n.TopicID))
		} else {
			t, ok = im.Topic(n.Topic)
		}
		switch {
		case !ok:
			w.CatchUp = true
		case reconcileBehind && !w.Reconcile:
			if p, ok := t.Partition(n.Partition); ok && p.Leader == self && !leading(t.ID, n.Partition) {
				w.Reconcile = true
			}
		}
		// Nothing more to learn once both are known.
		return !(w.CatchUp && (w.Reconcile || !reconcileBehind))
	})
	return w
}
