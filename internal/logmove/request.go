package logmove

import "path/filepath"

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

// Place is the log directory a new replica is created in: the one an
// AlterReplicaLogDirs request named before the replica existed
// (preferred, when ok and one of dirs), else the one of dirs holding the
// fewest open replicas by counts (the first on a tie), spreading new
// partitions over log.dirs.
func Place(dirs []string, counts map[string]int, preferred string, ok bool) string {
	if ok {
		return preferred
	}
	best := dirs[0]
	for _, d := range dirs[1:] {
		if counts[d] < counts[best] {
			best = d
		}
	}
	return best
}

// Opened is what the broker knows, as a replica opens, of a move asked for
// it before: a directory an AlterReplicaLogDirs request named while the
// replica was not hosted, or the destination of a move a restart
// interrupted (storage.RecoverMoves), with the future log it left.
type Opened struct {
	Preferred    string
	HasPreferred bool
	CurrentDir   string // the root the replica opened in
	Kept         string // the future log's directory a restart left
	HasKept      bool
	// Blocked: a log directory is offline, or a move of the replica
	// already runs: nothing starts.
	Blocked bool
}

// OnOpen is what becomes of Opened's move.
type OnOpen struct {
	// DiscardKept: delete the kept future log.
	DiscardKept bool
	// Resume the move into the kept future log (to Dir); if it cannot be
	// kept, discard it and start afresh.
	Resume bool
	// Start a move to Dir from the start.
	Start bool
	Dir   string
}

// Reopen decides what becomes, once a replica opened, of the move asked
// for it: none when no directory was asked for, the replica opened there
// already, or a move cannot start now (a kept future log is then
// discarded); else resumed into the future log the restart kept when
// that is in the directory asked for, or started afresh.
func Reopen(o Opened) OnOpen {
	if !o.HasPreferred || o.Preferred == o.CurrentDir || o.Blocked {
		return OnOpen{DiscardKept: o.HasKept}
	}
	if o.HasKept && filepath.Dir(o.Kept) == o.Preferred {
		return OnOpen{Resume: true, Dir: o.Preferred}
	}
	return OnOpen{DiscardKept: o.HasKept, Start: true, Dir: o.Preferred}
}
