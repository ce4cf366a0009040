package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/skein-log/skein/internal/vfs"
)

// Snapshotter is the caller's state machine as the Core sees it. Snapshot
// must return the state after every entry the caller was handed so far
// (Output.Committed of every earlier Ready); Restore replaces the whole state
// with a snapshot's, taken after the entry at index: a caller that tracks
// the index its state reflects must set it there, as it would after
// applying that entry. The Core calls both from inside Ready and NewCore,
// on the caller's goroutine.
type Snapshotter interface {
	Snapshot() ([]byte, error)
	Restore(index uint64, data []byte) error
}

// Defaults and limits. Raft's flow control is bounded by the byte limits
// below; the transport bounds queues and frames on top.
const (
	DefaultElectionTicks   = 10
	DefaultHeartbeatTicks  = 1
	DefaultSnapshotEntries = 10_000
	DefaultKeepEntries     = 1_000
	DefaultSegmentBytes    = 16 << 20
	// DefaultMaxEntryBytes bounds one proposal (the metadata commit limit).
	DefaultMaxEntryBytes = 8 << 20

	// maxSizePerMsg caps the entries in one append message (raft still
	// sends one entry larger than this alone).
	maxSizePerMsg = 1 << 20
	// maxInflightMsgs and maxInflightBytes bound what a leader sends a
	// follower before hearing back.
	maxInflightMsgs  = 256
	maxInflightBytes = 32 << 20
	// maxUncommittedBytes bounds a leader's uncommitted tail; beyond it
	// proposals are refused (ErrProposalDropped) until followers catch up.
	maxUncommittedBytes = 64 << 20
	// maxCommittedPerReady bounds the entries one Ready hands to the caller.
	maxCommittedPerReady = 16 << 20
	// entryOverheadBytes covers the batch header, record framing and
	// protobuf fields around an entry's data in the log.
	entryOverheadBytes = 256
	// maxVoters is far above any sensible quorum; it bounds the config.
	maxVoters = 64
)

// CoreConfig configures a Core. Zero values take the defaults above.
type CoreConfig struct {
	ID uint64 // this node's Raft id (RaftID of its node id)
	// Voters is a static quorum's voters (controller.quorum.voters), every
	// voter's Raft id including ID. Empty with Dynamic.
	Voters []uint64
	// Dynamic makes the membership state rather than configuration
	// (KIP-853, controller.quorum.bootstrap.servers): it comes from the
	// directory, changes through AddVoter and RemoveVoter, and a node with
	// an empty directory waits to be added, unless Standalone.
	Dynamic bool
	// Standalone, with Dynamic and an empty directory, founds the quorum
	// with this node as its only voter (kafka-storage format --standalone).
	Standalone bool
	// Self is this node's own record (Dynamic): its directory id and
	// endpoints, as a standalone founder records them.
	Self Member
	// UpdateSelf makes a voter whose record in the log names other
	// endpoints than Self's ask the leader to record Self's
	// (UpdateRaftVoter; a leader records its own). Off when Self's
	// endpoints are not ones others can dial (a wildcard host).
	UpdateSelf bool
	Dir        string // the quorum's directory
	FS         vfs.FS

	ElectionTicks  int // ticks without a leader before campaigning
	HeartbeatTicks int // ticks between a leader's heartbeats

	// SnapshotEntries is how many applied entries trigger a snapshot and
	// compaction; KeepEntries stay in the log behind the snapshot so that a
	// slightly slow follower catches up from entries rather than a snapshot.
	SnapshotEntries uint64
	KeepEntries     uint64
	// SegmentBytes sizes the entry log's segments; compaction frees whole
	// segments.
	SegmentBytes int64
	// MaxEntryBytes bounds one proposal's data.
	MaxEntryBytes int

	Logger      *slog.Logger
	Snapshotter Snapshotter
}

// checkVoters validates the static voters, or the dynamic quorum's own
// record.
func (c *CoreConfig) checkVoters() error {
	if c.Dynamic {
		if len(c.Voters) > 0 {
			return errors.New("quorum: a dynamic quorum takes no static voters")
		}
		if RaftID(c.Self.NodeID) != c.ID || c.Self.NodeID < 0 {
			return fmt.Errorf("quorum: own member record is node %d, raft id %d", c.Self.NodeID, c.ID)
		}
		if c.Standalone {
			return c.Self.validate()
		}
		return nil
	}
	if len(c.Voters) == 0 || len(c.Voters) > maxVoters {
		return fmt.Errorf("quorum: %d voters, want 1 to %d", len(c.Voters), maxVoters)
	}
	c.Voters = slices.Sorted(slices.Values(c.Voters))
	if slices.Contains(c.Voters, 0) || len(slices.Compact(slices.Clone(c.Voters))) != len(c.Voters) {
		return fmt.Errorf("quorum: voters %v must be distinct and non-zero", c.Voters)
	}
	if !slices.Contains(c.Voters, c.ID) {
		return fmt.Errorf("quorum: id %d is not among the voters %v", c.ID, c.Voters)
	}
	return nil
}

// withDefaults validates the config and fills in defaults.
func (c CoreConfig) withDefaults() (CoreConfig, error) {
	if c.ID == 0 {
		return c, errors.New("quorum: id 0 is reserved by raft")
	}
	if err := c.checkVoters(); err != nil {
		return c, err
	}
	if c.FS == nil || c.Dir == "" {
		return c, errors.New("quorum: FS and Dir are required")
	}
	if c.Snapshotter == nil {
		return c, errors.New("quorum: a Snapshotter is required")
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = DefaultElectionTicks
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = DefaultHeartbeatTicks
	}
	if c.ElectionTicks <= c.HeartbeatTicks {
		return c, fmt.Errorf("quorum: election ticks (%d) must exceed heartbeat ticks (%d)", c.ElectionTicks, c.HeartbeatTicks)
	}
	if c.SnapshotEntries == 0 {
		c.SnapshotEntries = DefaultSnapshotEntries
	}
	if c.KeepEntries == 0 {
		c.KeepEntries = DefaultKeepEntries
	}
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.MaxEntryBytes <= 0 {
		c.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if int64(c.MaxEntryBytes)+entryOverheadBytes > c.SegmentBytes {
		return c, fmt.Errorf("quorum: segment bytes (%d) must hold the largest entry (%d bytes plus %d of framing)", c.SegmentBytes, c.MaxEntryBytes, entryOverheadBytes)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
