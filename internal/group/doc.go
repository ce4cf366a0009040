// Package group is the consumer-group coordinator of Kafka's classic group
// protocol as a pure state machine: JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, offset commits and fetches, ListGroups, DescribeGroups,
// DeleteGroups and OffsetDelete for the groups whose __consumer_offsets
// partition this broker leads.
//
// It does no I/O, reads no clock, draws no randomness and starts no
// goroutines. Time enters as milliseconds; effects leave as data in an
// Output. That is what lets the simulator and the scenario tests drive it
// deterministically.
//
// # The runtime's contract
//
// One Coordinator serves one __consumer_offsets partition (PartitionFor maps
// a group to its partition). The runtime calls it under one lock and:
//
//  1. Gives every JoinGroup and SyncGroup request a unique RequestID. Such a
//     request may be parked (a join waits for the rebalance, a sync waits
//     for the leader's assignment); its answer then arrives in the Output of
//     a later call. Every RequestID is answered exactly once, at the latest
//     by Unload, so connections never wait forever (their answers are sent
//     in request order).
//  2. Appends Output.Records to the partition and waits until they are
//     committed (replicated with acks=all) BEFORE sending any answer of the
//     same Output or the call's direct return value. An assignment or an
//     offset commit is thus never acknowledged before it would survive a
//     coordinator failover. If the append fails, the runtime answers those
//     requests with NOT_COORDINATOR, calls Unload and reloads the partition
//     (the in-memory state ran ahead of the log).
//  3. Appends each of Output.AssignmentWrites after the Output's Records
//     and, once it is committed or has failed, reports the outcome with
//     AssignmentWritten and carries out that call's Output. The Output's
//     answers do not wait for it. The leader's SyncGroup asks for one: its
//     assignment takes effect (the group becomes Stable, the generation's
//     parked syncs get their assignments) only once reported committed. A
//     failure needs no reload, since the coordinator has not acted on the
//     record: the syncs get the mapped error and the group rebalances, as
//     in Kafka.
//  4. Calls Tick(now) no later than NextDeadline(): session expiry, the
//     rebalance timeout, the initial rebalance delay and the sync timeout
//     all fire there. ExpireOffsets runs on its own, slower schedule
//     (offsets.retention.check.interval.ms).
//  5. On becoming leader of the partition, builds a new Coordinator and
//     calls Apply for every record of the partition in offset order before
//     serving requests, and sends no answer until the records applied are
//     committed (the log's tail may be uncommitted: a failed write's
//     records, or a former leader's); on losing it, calls Unload.
//
// # Kafka semantics followed
//
// Rebalance and session timeouts are separate (KIP-62): a member parked in
// a join or a sync is kept alive; others expire after their session timeout
// without a heartbeat. A rebalance ends when every member has rejoined or
// when the rebalance timeout (the largest over members) passes; members
// that did not rejoin are dropped, except static ones (KIP-345), which only
// leave by session expiry or LeaveGroup. The first rebalance of an empty
// group waits group.initial.rebalance.delay.ms, extended while new members
// keep arriving, up to the rebalance timeout. JoinGroup v4+ (KIP-394) first
// answers MEMBER_ID_REQUIRED with an id the client rejoins with; such pending
// members expire after their session timeout. A static member rejoining
// with a known group.instance.id replaces the old member id (which is then
// fenced with FENCED_INSTANCE_ID) and, in a stable group whose protocol
// would not change, keeps its assignment without a rebalance. Cooperative
// rebalancing (KIP-429) needs nothing here: the clients drive it with
// ordinary rebalances.
//
// The protocol is chosen like Kafka: among protocols every member supports,
// each member votes for the first one in its own preference order and the
// one with the most votes wins (ties go to the earliest in the leader's
// order, where Kafka leaves them to hash order).
//
// Committed offsets of a group expire (KIP-211) offsets.retention.ms after
// the group became empty; for a group without a protocol type (offsets
// only, "simple consumers") after their commit time; for a stable consumer
// group, offsets of topics no member subscribes to any more after their
// commit time. An empty group without offsets is removed.
//
// # Records
//
// State lives in the compacted __consumer_offsets topic with Kafka's own
// key and value schemas (kmsg OffsetCommitKey v1 / OffsetCommitValue v3 and
// GroupMetadataKey v2 / GroupMetadataValue v3), so Kafka tooling can read
// the topic. A nil value is a tombstone. Like Kafka, the group's metadata is
// written when a generation's assignment is complete (the leader's
// SyncGroup; the group stays CompletingRebalance until it is committed,
// and a member that syncs meanwhile waits too), when a rebalance ends with no members, when a static member
// is replaced, and as a tombstone when the group is deleted; a loaded group
// with members is Stable and its members' sessions start at load time.
package group
