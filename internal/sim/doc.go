// Package sim runs a whole Skein cluster — brokers with combined
// controllers, the metadata quorum, the network and the disks — in one
// goroutine on simulated time, from one seed, and checks the replication
// contract at every step and at the end.
//
// It calls the production decision code: quorum.Core (etcd raft) for the
// metadata log, internal/controller for every metadata decision,
// internal/metadata for the image, replication.Leader for high watermarks,
// acks and ISR changes, replication.TruncationPoint for follower
// reconciliation, replicafetch.Session for each follower's fetcher,
// producer.Table for idempotence, storage.Log on a crashable vfs.Mem for
// the partition logs, and the internal/api handlers (Produce, Fetch,
// OffsetForLeaderEpoch, Metadata, InitProducerId, and the consumer-group
// ones behind grouphost.Backend over one grouphost.Host per coordinator,
// as internal/node) that real clients reach. Simulated group members run
// the classic protocol (join, sync, heartbeat, offset fetch, fetch,
// commit) through those handlers while members and coordinators crash.
// The partition runtime (produce, acks, group commit, write.caching,
// follower append and truncation, ISR proposals and resends) and the fetch
// read plan are internal/replica's core, the one internal/node wraps,
// driven here from the event queue (node_partition.go), as are the
// fetcher session (node_fetcher.go) and the group host (node_group.go).
// What else internal/node does with goroutines, sockets, timers and files
// — the controller's broker sessions and the broker's session with it —
// is re-done here single-threaded (see node_*.go); the comments there name
// the internal/node code each piece mirrors. Of the Raft transport's
// sockets only what tells a node that a peer's process is gone is
// modelled (a killed process's connections close, its port refuses; a
// powered-off machine says nothing: node_quorum_conn.go), and fed to the
// same quorum.Core.PeerDown that quorum.Node calls.
//
// Rot is simulated in the bytes a batch's CRC covers (and its magic byte),
// followed by a crash so that recovery meets it, in the segments recovery
// re-checks (the last one, and those from the recovery point on). Three
// cases are left out because the design has no answer for them yet: rot a
// running leader reads (it answers KAFKA_STORAGE_ERROR to followers and
// consumers but keeps leading, so the partition stalls), rot in an older
// sealed segment (trusted by recovery, so found only when read, with the
// same stall), and rot in the first 16 header bytes
// (base offset, length, leader epoch: outside Kafka's CRC), where a flipped
// leader epoch enters the epoch cache at recovery and makes the follower
// reconcile forever.
//
// Everything random (network delays, drops, duplicates, partitions,
// crashes, torn writes, client timing, raft's election jitter through
// testing/cryptotest) derives from the seed, so a failing seed replays bit
// for bit. Run with:
//
//	go test ./internal/sim/ -sim.seeds=500
//	go test ./internal/sim/ -sim.seeds=200 -sim.first=501 -sim.duration=2m   # a further batch, longer runs
//	go test ./internal/sim/ -run '^TestSeeds$' -sim.seed=1234 -v   # replay one seed, print its trace
//
// A failing seed prints the replay command for the test that ran it.
package sim
