// Package quorum is the metadata quorum: controllers replicate opaque
// entries (metadata records, encoded by the caller) with Raft
// (go.etcd.io/raft/v3), and every controller applies them in the same order.
// The state machine (the metadata image) belongs to the caller; this package
// only orders, persists and delivers bytes.
//
// Three layers, kept apart so that the deterministic simulator can drive the
// middle one in a single goroutine with simulated time, network and disks:
//
//  1. disk (disk*.go): durable Raft state on our own seams (vfs, storage).
//     Entries live in a storage.Log, one v2 record batch per entry, whose one
//     record's value is the protobuf-encoded raftpb.Entry. Raft index i is log
//     offset i-1: the first entry (index 1) is offset 0, and after compaction
//     or an installed snapshot at index s the log starts at offset s. The
//     HardState and the latest snapshot (the state machine's bytes plus its
//     raftpb.SnapshotMetadata) are small checksummed files replaced
//     atomically. Load rebuilds a raft.MemoryStorage from them.
//  2. Core (core*.go): a RawNode plus the disk, with no goroutines, no clock
//     and no network. Callers Tick, Step and Propose, then call Ready, which
//     persists (fsync) before it returns the messages to send and the entries
//     to apply: Raft's rule that state is durable before anyone hears of it.
//  3. Node (node*.go): the runtime. It owns a Core, a ticker, inbound
//     messages, proposals and a Transport, and completes a proposal once its
//     entry is committed and applied locally.
//
// Identity. Raft reserves id 0, and Kafka node ids start at 0, so a
// controller's Raft id is its node id plus one (RaftID, NodeID). Voters are
// static (controller.quorum.voters); every node bootstraps the same
// configuration, so no configuration-change entries are ever written.
//
// Applying. Entries are delivered in index order, each index at most once per
// process lifetime. After a restart the state machine is rebuilt from the
// latest snapshot (Snapshotter.Restore) and the committed entries after it
// are delivered again: the caller must start from an empty state and rebuild
// from snapshot + replay, never keep state of its own across restarts.
//
// Wire. Raft messages travel one way, in Kafka-style frames on the controller
// listener (see frame.go): a node dials each peer to send and accepts
// connections to receive, and nothing is ever answered on the same
// connection.
package quorum
