package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/vfs"
)

// Defaults and limits of the runtime.
const (
	DefaultTickInterval = 100 * time.Millisecond

	// inboundQueueLen bounds messages waiting for the Raft loop; beyond it
	// Step drops them (Raft retransmits).
	inboundQueueLen = 1024
	// proposalQueueLen bounds proposals waiting for the Raft loop.
	proposalQueueLen = 256
	// maxPendingProposals bounds proposals accepted but not yet resolved.
	maxPendingProposals = 4096
	// reportQueueLen bounds transport reports waiting for the loop.
	reportQueueLen = 256
	// controlQueueLen bounds operator operations waiting for the loop.
	controlQueueLen = 16
	// maxEventsPerRound bounds how many queued events the loop takes
	// before one Ready, so one fsync covers many messages and proposals
	// while ticks still get through.
	maxEventsPerRound = 128
)

// NodeConfig configures a Node. Zero values take defaults.
type NodeConfig struct {
	NodeID    int32
	ClusterID string
	Voters    []config.Voter // controller.quorum.voters; must include NodeID (empty with Dynamic)
	// Dynamic, Standalone and Self: a dynamic quorum (see CoreConfig).
	// Self's listener named ListenerName is the endpoint peers dial; it
	// is also how this node picks its peers' endpoints.
	Dynamic      bool
	Standalone   bool
	Self         Member
	ListenerName string
	// LocalAddr is the local IP of connections to the other voters (nil:
	// the OS chooses); outbound.bind.address.
	LocalAddr net.IP
	// Secure, when set, secures connections to the other voters (see
	// TCPTransportConfig.Secure).
	Secure func(ctx context.Context, conn net.Conn, addr string) (net.Conn, error)

	Dir string
	FS  vfs.FS

	// TickInterval is one Raft tick; ElectionTicks of them without a
	// leader start an election (10 × 100 ms ≈ 1 s by default).
	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int

	SnapshotEntries uint64 // see CoreConfig
	KeepEntries     uint64
	SegmentBytes    int64
	MaxEntryBytes   int // bounds one proposal's data

	// Snapshotter and Apply are the state machine. Both, and
	// OnLeaderChange, run on the Node's Raft goroutine, one at a time, and
	// must not block for long: Raft waits meanwhile.
	Snapshotter Snapshotter
	// Apply receives every committed entry's data in index order, once per
	// index per process lifetime (see the package comment on restarts).
	// data is shared with Raft's log and must not be modified.
	Apply func(index uint64, data []byte)
	// OnLeaderChange, if set, is told the new leader's node id (-1: none).
	OnLeaderChange func(leader int32)
	// PeersStopping, if set, names the peers (node ids) whose processes
	// are stopping too; Stop's handover never goes to one of them
	// (Core.Resign). Run on the Node's Raft goroutine when Stop begins.
	PeersStopping func() []int32
	// OnMembershipChange, if set, is told a dynamic quorum's membership
	// whenever it changes (and once at start).
	OnMembershipChange func(Membership)
	// UpdateSelf: see CoreConfig. OnSelfUpdate is then given each
	// UpdateRaftVoter the Core wants sent to the leader; it runs on the
	// Raft goroutine and must not block (send it elsewhere). The Core asks
	// again later while the record stays stale, so a lost request needs
	// no retry of the caller's.
	UpdateSelf   bool
	OnSelfUpdate func(VoterUpdate)

	// Transport carries messages out; nil means a TCPTransport to Voters.
	Transport Transport
	Logger    *slog.Logger
}

func (c NodeConfig) coreConfig() (CoreConfig, error) {
	if c.Apply == nil {
		return CoreConfig{}, errors.New("quorum: an Apply function is required")
	}
	if len(c.Voters) == 0 && !c.Dynamic {
		return CoreConfig{}, errors.New("quorum: no voters")
	}
	voters := make([]uint64, 0, len(c.Voters))
	for _, v := range c.Voters {
		if v.ID < 0 {
			return CoreConfig{}, fmt.Errorf("quorum: negative voter id %d", v.ID)
		}
		voters = append(voters, RaftID(v.ID))
	}
	maxEntry := c.MaxEntryBytes
	if maxEntry <= 0 {
		maxEntry = DefaultMaxEntryBytes
	}
	return CoreConfig{
		ID:              RaftID(c.NodeID),
		Voters:          voters,
		Dynamic:         c.Dynamic,
		Standalone:      c.Standalone,
		Self:            c.Self,
		UpdateSelf:      c.UpdateSelf,
		Dir:             c.Dir,
		FS:              c.FS,
		ElectionTicks:   c.ElectionTicks,
		HeartbeatTicks:  c.HeartbeatTicks,
		SnapshotEntries: c.SnapshotEntries,
		KeepEntries:     c.KeepEntries,
		SegmentBytes:    c.SegmentBytes,
		MaxEntryBytes:   maxEntry + proposalHeaderSize,
		Logger:          c.Logger,
		Snapshotter:     c.Snapshotter,
	}, nil
}
