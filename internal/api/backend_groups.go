package api

import "github.com/skein-log/skein/internal/group"

// OffsetsTopic is Kafka's internal topic of committed offsets and group
// metadata; a group's coordinator is the leader of its partition.
const OffsetsTopic = "__consumer_offsets"

// GroupBackend is what the consumer-group handlers need: the coordinators
// of the __consumer_offsets partitions this broker leads. Calls for a group
// whose coordinator is elsewhere fail with NOT_COORDINATOR, for one still
// loading with COORDINATOR_LOAD_IN_PROGRESS. Answers that carry a done
// callback arrive once the coordinator's records are committed (acks=all),
// possibly from another goroutine; nothing here blocks.
type GroupBackend interface {
	// EnsureOffsetsTopic creates __consumer_offsets through the active
	// controller if it does not exist yet (Kafka creates it on the first
	// FindCoordinator) and calls done once this broker's image has it.
	EnsureOffsetsTopic(done func(error))

	Join(req group.JoinRequest, done func(group.JoinResponse))
	Sync(req group.SyncRequest, done func(group.SyncResponse))
	Heartbeat(req group.HeartbeatRequest) error
	Leave(req group.LeaveRequest, done func(group.LeaveResponse))
	// CommitOffsets answers with an error for the whole request (the
	// coordinator is not here) or one result per offset, in order.
	CommitOffsets(req group.CommitRequest, done func([]group.PartitionError, error))
	// TxnCommitOffsets is CommitOffsets for TxnOffsetCommit: the offsets
	// are pending, invisible to FetchOffsets but for
	// FetchedOffset.Unstable, until the producer's transaction commits.
	TxnCommitOffsets(req group.TxnCommitRequest, done func([]group.PartitionError, error))
	// FetchOffsets: nil partitions means every committed offset. The
	// answer waits for the coordinator's writes in flight, so it never
	// shows an offset that is not committed yet.
	FetchOffsets(groupID string, partitions []group.TopicPartition, done func([]group.FetchedOffset, error))
	DescribeGroup(groupID string) (group.GroupDescription, error)
	// ListGroups lists the groups of every coordinator here; the error is
	// COORDINATOR_LOAD_IN_PROGRESS while one of them loads (the list then
	// holds the others' groups).
	ListGroups(states []group.State) ([]group.GroupListing, error)
	// DeleteGroups answers with one error per group, in request order.
	DeleteGroups(groupIDs []string, done func([]error))
	DeleteOffsets(groupID string, partitions []group.TopicPartition, done func(group.DeleteOffsetsResponse))
}
