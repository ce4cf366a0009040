// Package metadata holds the cluster metadata records and the immutable image
// built by applying them in log order.
//
// Every broker applies the same records, in the same order, to the same starting
// image, so every broker ends up with an identical view of brokers, topics and
// partitions. Today the records come from a single broker's local metadata log;
// later a Raft quorum replicates them. Either way this package does no I/O: it
// only validates records, applies them and (de)serialises them.
//
// Images are copy-on-write: Apply returns a new image and leaves the receiver
// untouched, so a reader holding an old image never sees a half-applied change.
// Values returned by accessors (*Topic, *Broker and the slices and maps inside
// them) are shared between images and MUST NOT be modified; use Clone when a
// mutable copy is needed.
package metadata
