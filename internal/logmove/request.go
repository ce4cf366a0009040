package logmove

// Replica is what the broker knows of one partition named in an
// AlterReplicaLogDirs request.
type Replica struct {
	// DirKnown: the destination is one of this broker's log.dirs.
	DirKnown bool
	// DirOnline: the destination directory is online.
	DirOnline bool
	// AnyDirOffline: some log directory of this broker is offline. Kafka
	// creates no future log then, so that one partition never has
	// future logs in two directories.
	AnyDirOffline bool
	// Exists: the image has the partition.
	Exists bool
	// Hosted: this broker has the replica open.
	Hosted bool
	// HostedOffline: its log is in an offline directory.
	HostedOffline bool
	// CurrentDir is the root directory the replica's log is in.
	CurrentDir string
	// FutureDir is the root of a move under way ("" none).
	FutureDir string
}

// Outcome is the decision on one partition of an AlterReplicaLogDirs
// request.
type Outcome struct {
	// Err is the partition's answer (ErrNone when accepted).
	Err Error
	// Prefer: remember Dir for when the replica is created here.
	Prefer bool
	// Cancel the move under way (its future log is deleted).
	Cancel bool
	// Start a move to Dir.
	Start bool
	Dir   string
}

// Error is a partition's error in the answer, named as Kafka's.
type Error int

const (
	ErrNone Error = iota
	// ErrLogDirNotFound: LOG_DIR_NOT_FOUND (57).
	ErrLogDirNotFound
	// ErrStorage: KAFKA_STORAGE_ERROR (56).
	ErrStorage
	// ErrReplicaNotAvailable: REPLICA_NOT_AVAILABLE (9), which Kafka
	// answers for a replica it does not host (kept from its ZooKeeper
	// days for compatibility, instead of NOT_LEADER_OR_FOLLOWER).
	ErrReplicaNotAvailable
	// ErrUnknownTopicOrPartition: UNKNOWN_TOPIC_OR_PARTITION (3).
	ErrUnknownTopicOrPartition
)

// Decide answers one partition of AlterReplicaLogDirs, in the order Kafka's
// ReplicaManager.alterReplicaLogDirs checks: the destination must be a
// configured (LOG_DIR_NOT_FOUND) online (KAFKA_STORAGE_ERROR) directory;
// a move to another directory replaces the one under way; a replica not
// hosted here has the directory remembered for when it is created and
// answers REPLICA_NOT_AVAILABLE; a move to the directory the replica is
// already in cancels any move under way and is otherwise nothing to do.
func Decide(r Replica, dir string) Outcome {
	switch {
	case !r.DirKnown:
		return Outcome{Err: ErrLogDirNotFound}
	case !r.DirOnline:
		return Outcome{Err: ErrStorage}
	case !r.Exists:
		// Kafka (KRaft) answers a partition it has never heard of the
		// same way; remembering a directory for it would keep the
		// entry until the broker stops.
		return Outcome{Err: ErrUnknownTopicOrPartition}
	case r.HostedOffline:
		return Outcome{Err: ErrStorage}
	case !r.Hosted:
		return Outcome{Err: ErrReplicaNotAvailable, Prefer: true, Dir: dir}
	case dir == r.CurrentDir:
		// Also the way to call off a move (Kafka removes the future
		// replica when the destination changes).
		return Outcome{Cancel: r.FutureDir != "", Dir: dir}
	case dir == r.FutureDir:
		return Outcome{Dir: dir} // already moving there
	case r.AnyDirOffline:
		return Outcome{Err: ErrStorage}
	}
	return Outcome{Cancel: r.FutureDir != "", Start: true, Dir: dir}
}
