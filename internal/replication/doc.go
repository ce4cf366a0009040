// Package replication is the leader side of partition replication as a pure
// state machine: follower positions, the in-sync replica set (ISR), the high
// watermark (HW), which acks=all produces may complete, and the ISR changes
// to propose to the controller. It also holds the follower's truncation rule
// (TruncationPoint).
//
// It does no I/O, reads no clock and starts no goroutines. The broker runtime
// calls a Leader under the partition lock, passes time as milliseconds, and
// acts on what it returns (complete waiting produces, send AlterPartition).
// That is what lets the simulator drive it deterministically.
//
// # Durable positions
//
// Kafka computes the HW from each ISR member's log end offset. Skein promises
// more (docs: acks=all survives every broker losing power at once), so every
// position here is a DURABLE end: a follower fsyncs what it fetched before it
// fetches again, so the offset in its Fetch request is what it has on disk;
// the leader's own durable end comes from its group-committed fsync. With
// write.caching=true the node passes log end offsets instead and the promise
// is Kafka's.
//
// # High watermark
//
// HW = min over the "maximal ISR" of durable ends, never decreasing (KIP-497
// and Kafka's Partition.maybeIncrementLeaderHW): a replica the leader has
// proposed to add counts as soon as it is proposed, while a replica proposed
// for removal keeps counting until the controller commits the shrink. Either
// way the HW only ever waits for more replicas than the committed ISR, so a
// rejected proposal cannot have let the HW run ahead of the real ISR.
//
// # ISR changes
//
// At most one change is in flight (Kafka's PendingExpandIsr/PendingShrinkIsr).
// A follower leaves the ISR when it has not been caught up to the leader's
// log end within replica.lag.time.max.ms (KIP-16 style time-based lag); it
// joins when its durable end is at least the HW and at least the start offset
// of the current leader epoch, so it holds everything the new leader kept
// from earlier epochs (Kafka's isFollowerInSync).
package replication
