package api

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/bufpool"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/fetchsession"
	"github.com/skein-log/skein/internal/loglevel"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/txnverify"
)

// Backend is what the handlers need from the broker runtime. The runtime
// (internal/node) implements it; handlers stay free of goroutines, sockets
// and files.
type Backend interface {
	NodeID() int32
	Config() *config.Broker
	// Loggers are the levels of this process's loggers, Kafka's broker
	// loggers (BROKER_LOGGER resources): described and changed here, on
	// the node, never persisted.
	Loggers() *loglevel.Levels
	// NowMs is the broker's clock in Unix milliseconds (the simulated
	// clock in internal/sim): Produce checks record timestamps against it
	// (message.timestamp.before.max.ms / after.max.ms).
	NowMs() int64
	// Image is the current immutable metadata image.
	Image() *metadata.Image
	// TopicConfig resolves a topic's effective configuration.
	TopicConfig(t *metadata.Topic) (config.TopicConfig, error)
	// Commit makes metadata records durable and applies them. The records
	// were produced by the controller's decision functions against Image().
	Commit(recs []metadata.Record) error
	// Reassign decides an AlterPartitionReassignments request at its turn
	// in the active controller's decision queue (against the image holding
	// every earlier decision), commits what it accepts and returns each
	// entry's outcome; err is the request's when nothing could be decided
	// or the commit failed.
	Reassign(reqs []controller.Reassignment, allowRFChange bool) (errs []error, err error)
	// UnregisterBroker decides an UnregisterBroker request at its turn in
	// the active controller's decision queue and commits it.
	UnregisterBroker(id int32) error
	// NewTopicID returns a fresh random topic id.
	NewTopicID() metadata.TopicID
	// AllocateProducerID hands out a new idempotent producer id, epoch 0.
	AllocateProducerID() (int64, error)

	// Produce appends validated batches to a partition led by this broker
	// and calls done once they are acknowledged as acks requires (never for
	// acks=0 beyond the append), or failed, or timed out.
	Produce(req ProduceParams, done func(ProduceResult))
	// Fetch reads from partitions, waiting up to MaxWait for MinBytes.
	Fetch(req FetchParams, done func([]FetchResult))
	// FetchSessions is the broker's incremental fetch session cache.
	FetchSessions() FetchSessions
	// DescribeLogDirs lists this broker's log directories and the
	// partition replicas in each, sorted by topic and partition.
	DescribeLogDirs() []LogDirDescription
	// AlterReplicaLogDir moves this broker's replica of a partition to
	// the log directory dir (or, not hosted yet, remembers dir for its
	// creation), as AlterReplicaLogDirs asks; the error carries the
	// partition's Kafka error.
	AlterReplicaLogDir(topic string, partition int32, dir string) error
	// DescribeProducers lists the idempotent producers of a partition led
	// here, by producer id.
	DescribeProducers(topic metadata.TopicID, partition int32) ([]ProducerState, error)
	// FetchMetadataLog serves a broker-only node's Fetch of the metadata
	// log (IsMetadataLogFetch) on a controller, long-polling for new
	// committed entries; FetchMetadataSnapshot serves FetchSnapshot.
	FetchMetadataLog(req *kmsg.FetchRequest, respond Respond)
	FetchMetadataSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse
	// ListOffset resolves a ListOffsets timestamp (-1 latest, -2 earliest,
	// -3 max timestamp, else by timestamp) for a partition; with
	// isolationLevel 1 (read_committed) the last stable offset bounds it
	// instead of the high watermark.
	ListOffset(topic metadata.TopicID, partition int32, timestamp int64, isolationLevel int8) (OffsetResult, error)
	// StartTxnVerification begins KIP-890 part 1's verification of a
	// transactional producer's first batch on a partition led here
	// (replica.StartTxnVerification): the guard the produce then carries,
	// and whether the coordinator must be asked at all.
	// epoch is the batch's producer epoch; tv2 marks a transaction
	// version 2 producer (Produce v12+, TxnOffsetCommit v5+ with
	// transaction.version 2), whose partitions are added, not verified.
	StartTxnVerification(topic metadata.TopicID, partition int32, producerID int64, epoch int16, tv2 bool) (guard uint64, need bool, err error)
	// VerifyTxn asks the transaction coordinator of v.TransactionalID
	// whether v.Partitions are in its ongoing transaction (AddPartitionsToTxn
	// v4 verify-only, batched per coordinator by a txnverify.Manager) and
	// calls v.Done with each partition's outcome, possibly from another
	// goroutine.
	VerifyTxn(v txnverify.Verification)
	// WriteTxnMarker appends a transaction marker (WriteTxnMarkers, the
	// coordinator's request) to a partition led here and calls done once
	// the high watermark has passed it, or with its error.
	WriteTxnMarker(p TxnMarkerParams, done func(error))
	// IsActiveController reports whether this node decides metadata
	// changes; Forward sends a request to the node that does and answers
	// once this node's metadata reflects the outcome.
	IsActiveController() bool
	// ActiveControllerID is the node id of the active controller as this
	// node knows it, -1 if unknown.
	ActiveControllerID() int32
	// LeaderSuspect reports that this broker just lost its replication
	// connection to a broker, which most likely died: Metadata then says
	// LEADER_NOT_AVAILABLE for its partitions instead of sending clients
	// to a dead address until the controller's fencing lands.
	LeaderSuspect(id int32) bool
	// SettleSuspects waits, briefly, until the controller has ruled on
	// every suspect broker, so a Metadata answer right after a crash
	// already names the new leaders: clients refresh metadata rarely
	// (franz-go at most every 5 s) and a stale answer costs them that long.
	SettleSuspects()
	// FencedAtMs is when this node's image first showed broker id
	// fenced (FenceTimes, on the NowMs clock), if it is fenced and this
	// node saw it happen: Metadata keeps listing a broker fenced moments
	// ago (fenced_listing.go).
	FencedAtMs(id int32) (int64, bool)
	Forward(r *Request, respond Respond)
	// Controller is the active controller's side of broker lifecycle and
	// ISR changes; its calls fail with NOT_CONTROLLER on other nodes.
	Controller() ControllerBackend
	// Quorum is the metadata quorum's leader side (DescribeQuorum,
	// AddRaftVoter, RemoveRaftVoter).
	Quorum() QuorumBackend

	// Groups is the consumer-group coordinator runtime.
	Groups() GroupBackend
	// Txns is the transaction coordinator runtime.
	Txns() TxnBackend

	// EpochEndOffset answers OffsetForLeaderEpoch for one partition led
	// here. currentLeaderEpoch is the caller's view (-1: unchecked).
	EpochEndOffset(topic metadata.TopicID, partition int32, currentLeaderEpoch, leaderEpoch int32) (epoch int32, endOffset int64, err error)
}

// FetchSessions is a fetchsession.Cache behind the runtime's lock and
// clock: Begin fills in the request's time, Complete the completion's.
type FetchSessions interface {
	Begin(r fetchsession.Request) fetchsession.Context
	Complete(ctx fetchsession.Context, results []fetchsession.Result) fetchsession.Outcome
}

// ProduceParams is one partition's share of a Produce request.
type ProduceParams struct {
	Topic     metadata.TopicID
	Partition int32
	Batches   [][]byte // each validated by records.Validate (or built with a fresh CRC): the log does not compute the CRC again
	Acks      int16
	Timeout   time.Duration
	// Coordinator marks a write of this broker's own coordinator (Kafka's
	// AppendOrigin.COORDINATOR): a producer's batch is checked for its
	// epoch only, not its sequences (the group coordinator's
	// transactional offset commits carry base sequence 0, as Kafka's).
	Coordinator bool
	// VerifyTxn makes the leader refuse a transactional batch that would
	// open a transaction without VerificationGuard, the guard
	// StartTxnVerification handed out, still standing (KIP-890 part 1;
	// set when transaction.partition.verification.enable is true).
	VerifyTxn         bool
	VerificationGuard uint64
}

// ProduceResult answers ProduceParams.
type ProduceResult struct {
	Err            error // nil, or an error that ErrorCode maps
	BaseOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
}

// TxnMarkerParams is one partition's share of a WriteTxnMarkers marker:
// the producer whose transaction ends, the outcome, and the epoch of the
// coordinator that decided it.
type TxnMarkerParams struct {
	Topic            metadata.TopicID
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	Timeout          time.Duration
	// TransactionVersion is WriteTxnMarkers v2's (KIP-1228): 2 for a
	// transaction version 2 client's transaction, whose marker must raise
	// the epoch of the transaction it ends; else 0.
	TransactionVersion int8
}

// Isolation levels of Fetch (v4+) and ListOffsets (v2+).
const (
	ReadUncommitted int8 = 0
	ReadCommitted   int8 = 1
)

// FetchParams is a whole Fetch request in domain terms.
type FetchParams struct {
	ReplicaID int32 // -1 for consumers
	// IsolationLevel is ReadCommitted for consumers that read only up to
	// the last stable offset and skip aborted transactions.
	IsolationLevel int8
	MaxWait        time.Duration
	MinBytes       int32
	MaxBytes       int32
	Partitions     []FetchPartition
	// Recycle is the request's (Request.Recycle): when set, the backend
	// may read records into buffers from internal/bufpool, handing its
	// hold of each (FetchResult.Buffer) to Recycle before it calls done;
	// when nil it must not.
	Recycle func(buf *bufpool.Ref)
}

// FetchPartition is one partition to read.
type FetchPartition struct {
	Topic              metadata.TopicID
	Partition          int32
	Offset             int64
	MaxBytes           int32
	CurrentLeaderEpoch int32 // -1 if the client did not send one
	// LastFetchedEpoch (v12+, followers) is the epoch of the last batch
	// the fetcher holds: the leader checks the fetch offset against where
	// that epoch ends in its own log (DivergingEpoch, KIP-595's check).
	LastFetchedEpoch int32
}

// FetchResult answers one FetchPartition, in request order.
type FetchResult struct {
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	Records        []byte
	// Buffer, when set, is the pooled buffer Records lies in (its holder
	// releases it once nothing refers to Records): only with
	// FetchParams.Recycle, which the answer's holds are handed to.
	Buffer *bufpool.Ref
	// LastStableOffset is the partition's: the first offset of the
	// earliest open transaction, at most the high watermark.
	LastStableOffset int64
	// AbortedTxns (read_committed only) are the aborted transactions
	// overlapping Records: the consumer drops their records.
	AbortedTxns []AbortedTxn
	// Diverging is set when the fetcher's log diverges from the leader's:
	// its last fetched epoch ends on the leader before its fetch offset.
	Diverging *EpochEnd
}

// AbortedTxn is one aborted transaction a read_committed fetch reports.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// EpochEnd is where a leader epoch ends in a log.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// OffsetResult answers ListOffset.
type OffsetResult struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// ControllerBackend is what the controller-only APIs need. Every call
// answers through its callback, exactly once and possibly from another
// goroutine, once the decision is committed and applied (or refused), as
// Produce does: no controller handler blocks.
type ControllerBackend interface {
	RegisterBroker(req *kmsg.BrokerRegistrationRequest, conn ConnID, done func(brokerEpoch int64, err error))
	BrokerHeartbeat(req *kmsg.BrokerHeartbeatRequest, conn ConnID, done func(BrokerHeartbeatResult, error))
	// AlterPartitions decides the ISR changes of one AlterPartition
	// request together (one metadata entry) and gives one result per
	// change, in order.
	AlterPartitions(reqs []AlterPartitionParams, done func([]AlterPartitionResult))
	AllocateProducerIDs(brokerID int32, brokerEpoch int64, done func(start int64, length int32, err error))
}

// AlterPartitionParams is one partition's ISR change proposal: the new
// ISR, computed from the leader and partition epochs the leader holds.
type AlterPartitionParams struct {
	BrokerID       int32
	BrokerEpoch    int64
	Topic          metadata.TopicID
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterPartitionResult is the outcome of one AlterPartitionParams: the
// partition as committed, or why the change was refused.
type AlterPartitionResult struct {
	Partition metadata.Partition
	Err       error
}

// ConnID identifies the connection a request came on, so the controller
// can notice a broker's heartbeat connection closing.
type ConnID any

// BrokerHeartbeatResult answers a heartbeat.
type BrokerHeartbeatResult struct {
	IsCaughtUp     bool
	IsFenced       bool
	ShouldShutdown bool
}
