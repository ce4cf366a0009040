package quorum

import (
	"errors"
	"fmt"
	"log/slog"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Errors returned by Core (and Node).
var (
	// ErrNotLeader: only the leader accepts proposals; callers forward to
	// the leader named in the NotLeaderError.
	ErrNotLeader = errors.New("not the quorum leader")
	// ErrEntryTooLarge: the proposal exceeds MaxEntryBytes.
	ErrEntryTooLarge = errors.New("quorum entry too large")
	// ErrEmptyEntry: empty entries are Raft's own no-ops and cannot be
	// proposed.
	ErrEmptyEntry = errors.New("empty quorum entry")
	// ErrFailed: a storage error stopped the Core; the process must
	// restart it from disk.
	ErrFailed = errors.New("quorum core failed")
)

// NotLeaderError is ErrNotLeader with the leader this node knows of.
type NotLeaderError struct {
	Leader uint64 // Raft id of the leader, 0 if unknown
}

func (e *NotLeaderError) Error() string {
	if e.Leader == 0 {
		return "not the quorum leader (leader unknown)"
	}
	return fmt.Sprintf("not the quorum leader (leader is raft id %d)", e.Leader)
}

// LeaderNode is the leader's Kafka node id, -1 if unknown.
func (e *NotLeaderError) LeaderNode() int32 { return NodeID(e.Leader) }

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Entry is one committed entry. Data is nil for Raft's own empty entries
// (written by each new leader); callers skip those but may use their Term.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte
}

// SnapshotInfo identifies a snapshot.
type SnapshotInfo struct {
	Index uint64
	Term  uint64
}

// Output is what one Ready produced, already durable.
type Output struct {
	// Messages go to the peers named in their To field. The caller must
	// report a failed MsgSnap delivery (ReportSnapshot) and may report
	// unreachable peers (ReportUnreachable).
	Messages []*raftpb.Message
	// Committed entries, in index order, to apply before the next Ready.
	Committed []Entry
	// SoftState is the new leader and role, nil if unchanged.
	SoftState *raft.SoftState
	// Restored is set when a snapshot from the leader replaced the state
	// machine (through Snapshotter.Restore) during this Ready.
	Restored *SnapshotInfo
	// Membership is the new membership when a configuration change (or a
	// snapshot) changed it during this Ready, nil otherwise.
	Membership *Membership
	// Changes are the membership changes this leader was asked for
	// (AddVoter, RemoveVoter) that ended during this Ready.
	Changes []ChangeResult
	// ReadStates answer ReadIndex requests: the leader's commit index
	// when it confirmed its leadership, with the request's context.
	ReadStates []raft.ReadState
	// SelfUpdate, when set, is this voter's record to send to the leader
	// as UpdateRaftVoter: the log records it with other endpoints.
	SelfUpdate *VoterUpdate
}

// Core is a Raft node without goroutines, clock or network: the caller
// ticks it, feeds it messages and proposals, and calls Ready to persist and
// collect the effects. It is not safe for concurrent use.
type Core struct {
	cfg       CoreConfig
	logger    *slog.Logger
	rn        *raft.RawNode
	ms        *raft.MemoryStorage
	disk      *disk
	confState *raftpb.ConfState
	members   members // the records of confState's nodes
	// change is the membership change this leader is driving, nil if none.
	change *memberChange
	// changesDone collects results for the next Output.
	changesDone []ChangeResult
	// announced: the log (or a snapshot) records a dynamic quorum's
	// membership beyond its bootstrap (see announce). Always true when
	// static.
	announced bool
	// joined: this directory has been a member (see noteJoined).
	joined bool
	// dynamic: the voters are the log's (kraft.version 1). Set from
	// CoreConfig.Dynamic, and on a static quorum's node once it applies
	// the kraft.version upgrade (or restores a snapshot taken after it).
	dynamic bool
	// volatile are the static voters' records this leader was sent
	// (UpdateRaftVoter at kraft.version 0), in volatileTerm: what the
	// kraft.version upgrade writes into the log (see core_upgrade.go).
	volatile     map[uint64]volatileVoter
	volatileTerm uint64
	// selfAnswered is the leader and term that answered this static
	// voter's UpdateRaftVoter (SelfUpdateAnswered).
	selfAnswered [2]uint64
	// selfUpdate is the UpdateRaftVoter for the next Output, and
	// selfUpdateWait the ticks before another may be planned (see
	// planSelfUpdate).
	selfUpdate     *VoterUpdate
	selfUpdateWait int
	// campaignDue: the leader's process is gone and this node campaigns
	// at the next tick (PeerDown), and again every campaignRetryTicks
	// while no leader is known; campaignWait counts the ticks to the next
	// try (see campaignTick).
	campaignDue  bool
	campaignWait int
	// resign is the handover this leader started before stopping, nil if
	// none (see core_resign.go); gone are the peers whose processes were
	// reported gone (PeerDown) and have sent nothing since.
	resign *resignation
	gone   map[uint64]bool

	applied   uint64 // last index handed out in Output.Committed (or restored)
	snapIndex uint64 // index of the latest durable snapshot
	// snapshotDue is the applied index at which the next snapshot is
	// taken; a failed Snapshotter.Snapshot postpones it.
	snapshotDue uint64
	failed      error // sticky: set by a storage error
}

// NewCore opens the directory, restores the state machine from the latest
// snapshot (if any) and starts Raft from the persisted state. Committed
// entries after the snapshot come out of the following Ready calls again.
func NewCore(cfg CoreConfig) (*Core, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("raft_id", cfg.ID)
	d, err := openDisk(cfg.FS, cfg.Dir, cfg.SegmentBytes, logger)
	if err != nil {
		return nil, err
	}
	c, err := newCoreFromDisk(cfg, logger, d)
	if err != nil {
		_ = d.close()
		return nil, err
	}
	return c, nil
}

func newCoreFromDisk(cfg CoreConfig, logger *slog.Logger, d *disk) (*Core, error) {
	boot, bootMembers, err := bootConfiguration(cfg, d)
	if err != nil {
		return nil, err
	}
	state, err := d.load(boot, !cfg.Dynamic)
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg:       cfg,
		logger:    logger,
		ms:        state.storage,
		disk:      d,
		confState: boot,
		members:   bootMembers,
		announced: !cfg.Dynamic,
		dynamic:   cfg.Dynamic,
	}
	c.noteJoined() // a standalone founder's bootstrap counts it
	if snap := state.snapshot; snap != nil {
		data, err := c.adoptSnapshotMembership(snap)
		if err != nil {
			return nil, err
		}
		if err := cfg.Snapshotter.Restore(snap.GetMetadata().GetIndex(), data); err != nil {
			return nil, fmt.Errorf("restore snapshot at index %d: %w", snap.GetMetadata().GetIndex(), err)
		}
		c.applied = snap.GetMetadata().GetIndex()
		c.snapIndex = c.applied
	}
	c.snapshotDue = c.snapIndex + cfg.SnapshotEntries
	c.rn, err = raft.NewRawNode(&raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   c.ms,
		Applied:                   c.applied,
		MaxSizePerMsg:             maxSizePerMsg,
		MaxCommittedSizePerReady:  maxCommittedPerReady,
		MaxUncommittedEntriesSize: maxUncommittedBytes,
		MaxInflightMsgs:           maxInflightMsgs,
		MaxInflightBytes:          maxInflightBytes,
		// A leader that loses touch with a majority steps down, and a node
		// rejoining after a partition cannot force a new term by itself.
		CheckQuorum: true,
		PreVote:     true,
		// Proposals are made on the leader only; a follower refuses them
		// (ErrNotLeader) so the caller knows where its entry went.
		DisableProposalForwarding: true,
		Logger:                    raftLogger{logger},
	})
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return c, nil
}

// Close closes the storage. The Core must not be used afterwards.
func (c *Core) Close() error { return c.disk.close() }

// ID is this node's Raft id.
func (c *Core) ID() uint64 { return c.cfg.ID }

// Tick advances Raft's logical clock by one tick, and starts the
// campaign a dead leader's report asked for when it is due (PeerDown).
func (c *Core) Tick() {
	if c.impostor() {
		return // never campaign in another disk's name (see impostor)
	}
	c.rn.Tick()
	c.resignTick()
	c.campaignTick()
	c.driveChange()
	c.planSelfUpdate()
}

// Campaign makes this node start an election now (tests and operator
// tooling; elections otherwise start on their own after ElectionTicks).
func (c *Core) Campaign() error { return c.rn.Campaign() }

// ForgetLeader makes a follower leaderless in its term without
// campaigning (etcd raft's ForgetLeader): with PreVote and CheckQuorum a
// follower refuses pre-votes while it believes in a leader it heard from
// within an election timeout, so followers that know the leader is dead
// forget it to elect another at once instead of waiting that timeout out.
// A leader that is in fact alive is followed again at its next message.
func (c *Core) ForgetLeader() error { return c.rn.ForgetLeader() }

// Step hands Raft a message from a peer. Messages from unknown nodes, to
// another node, or of local-only types are refused.
func (c *Core) Step(m *raftpb.Message) error {
	if m == nil {
		return errors.New("quorum: nil message")
	}
	if raft.IsLocalMsg(m.GetType()) {
		return fmt.Errorf("quorum: refusing local message type %s from the network", m.GetType())
	}
	if m.GetTo() != c.cfg.ID {
		return fmt.Errorf("quorum: message for raft id %d delivered to %d", m.GetTo(), c.cfg.ID)
	}
	if err := c.mayVote(m); err != nil {
		return err
	}
	if m.GetType() == raftpb.MsgHeartbeat && m.GetCommit() > c.lastIndex() {
		// The leader believes this node holds entries it does not: its
		// disk was replaced while its old record is still in the
		// configuration. Raft would panic; refusing keeps this node out
		// until that record is removed and the node added afresh.
		return fmt.Errorf("quorum: heartbeat commits index %d, this log ends at %d (a replaced disk?)", m.GetCommit(), c.lastIndex())
	}
	if !c.dynamic && !c.isMember(m.GetFrom()) {
		return fmt.Errorf("quorum: message from raft id %d, not a voter", m.GetFrom())
	}
	// A dynamic quorum's messages from non-members are Raft's to judge: a
	// node not yet in the configuration hears from the leader adding it, a
	// lagging member from a leader it does not know of yet, and a voter of
	// the old configuration may be needed to elect one of the new. A
	// removed node's elections cannot disturb a working quorum: PreVote
	// and CheckQuorum make members that hear from a leader ignore them.
	c.noteAlive(m.GetFrom())
	if err := c.rn.Step(m); err != nil {
		if errors.Is(err, raft.ErrStepPeerNotFound) {
			// A response from a node the configuration no longer (or not
			// yet) tracks: normal around a membership change.
			return nil
		}
		return fmt.Errorf("quorum: step %s from %d: %w", m.GetType(), m.GetFrom(), err)
	}
	return nil
}

// Propose appends data to the log if this node is the leader. It returns
// once Raft has accepted it; the entry is durable after the next Ready and
// committed when it comes out in Output.Committed.
func (c *Core) Propose(data []byte) error {
	if c.failed != nil {
		return c.failed
	}
	if len(data) == 0 {
		return ErrEmptyEntry
	}
	if len(data) > c.cfg.MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrEntryTooLarge, len(data), c.cfg.MaxEntryBytes)
	}
	st := c.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return &NotLeaderError{Leader: st.Lead}
	}
	if err := c.rn.Propose(data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			// A leadership transfer is under way (Resign).
			return fmt.Errorf("quorum: propose: %w", ErrProposalDropped)
		}
		return fmt.Errorf("quorum: propose: %w", err)
	}
	return nil
}

// ReadIndex asks the leader for its commit index, confirmed by a quorum
// (Raft's linearizable read, section 6.4 of the Raft thesis): it comes out
// in a later Output.ReadStates with rctx. A node that knows no leader, or
// a lost message, drops the request silently; callers bound their wait.
func (c *Core) ReadIndex(rctx []byte) { c.rn.ReadIndex(rctx) }

// Leader is the Raft id of the leader this node knows of, 0 if none.
func (c *Core) Leader() uint64 { return c.rn.BasicStatus().Lead }

// IsLeader reports whether this node is the leader.
func (c *Core) IsLeader() bool { return c.rn.BasicStatus().RaftState == raft.StateLeader }

// IsCandidate reports whether this node is asking for votes (past its
// pre-vote).
func (c *Core) IsCandidate() bool { return c.rn.BasicStatus().RaftState == raft.StateCandidate }

// Term is the current Raft term.
func (c *Core) Term() uint64 { return c.rn.BasicStatus().GetTerm() }

// Status is Raft's full status (with follower progress on the leader).
func (c *Core) Status() raft.Status { return c.rn.Status() }

// Applied is the last index handed to the caller (or restored).
func (c *Core) Applied() uint64 { return c.applied }

// SnapshotIndex is the index of the latest durable snapshot, 0 if none.
func (c *Core) SnapshotIndex() uint64 { return c.snapIndex }

// ReportUnreachable tells Raft the last message to id could not be sent, so
// it stops streaming to that peer and probes instead.
func (c *Core) ReportUnreachable(id uint64) { c.rn.ReportUnreachable(id) }

// ReportSnapshot tells Raft whether a MsgSnap to id was delivered.
func (c *Core) ReportSnapshot(id uint64, delivered bool) {
	status := raft.SnapshotFinish
	if !delivered {
		status = raft.SnapshotFailure
	}
	c.rn.ReportSnapshot(id, status)
}

// HasReady reports whether Ready would produce anything (other than a
// snapshot that is due).
func (c *Core) HasReady() bool {
	return c.rn.HasReady() || len(c.changesDone) > 0 || c.selfUpdate != nil
}

// Ready takes a snapshot if one is due, then persists Raft's pending state
// (a received snapshot, entries, HardState; everything fsynced) and returns
// what may now leave: messages to send and entries to apply. The caller must
// apply Output.Committed before calling Ready again, because the next
// snapshot is taken from the caller's state at that point.
//
// A storage error fails the Core for good (ErrFailed): Raft has already
// moved on in memory, so the only safe way forward is a restart from disk.
func (c *Core) Ready() (Output, error) {
	if c.failed != nil {
		return Output{}, c.failed
	}
	if err := c.maybeSnapshot(); err != nil {
		return Output{}, c.fail(err)
	}
	if !c.rn.HasReady() {
		out := Output{Changes: c.changesDone, SelfUpdate: c.selfUpdate}
		c.changesDone, c.selfUpdate = nil, nil
		return out, nil
	}
	rd := c.rn.Ready()
	var out Output
	if !raft.IsEmptySnap(rd.Snapshot) {
		info, err := c.installSnapshot(rd.Snapshot)
		if err != nil {
			return Output{}, c.fail(err)
		}
		out.Restored = info
	}
	if err := c.disk.appendEntries(rd.Entries); err != nil {
		return Output{}, c.fail(err)
	}
	if err := c.ms.Append(rd.Entries); err != nil {
		return Output{}, c.fail(fmt.Errorf("append to raft storage: %w", err))
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		if err := c.disk.saveHardState(rd.HardState); err != nil {
			return Output{}, c.fail(err)
		}
		if err := c.ms.SetHardState(rd.HardState); err != nil {
			return Output{}, c.fail(fmt.Errorf("set hard state: %w", err))
		}
	}
	for _, e := range rd.CommittedEntries {
		c.applied = e.GetIndex()
		if e.GetType() != raftpb.EntryNormal {
			if err := c.applyConfChange(e); err != nil {
				return Output{}, c.fail(err)
			}
			ms := c.Membership()
			out.Membership = &ms
			continue
		}
		out.Committed = append(out.Committed, Entry{Index: e.GetIndex(), Term: e.GetTerm(), Data: e.GetData()})
	}
	if out.Restored != nil {
		ms := c.Membership()
		out.Membership = &ms
	}
	out.Messages = rd.Messages
	out.SoftState = rd.SoftState
	out.ReadStates = rd.ReadStates
	c.rn.Advance(rd)
	c.driveChange()
	out.Changes, c.changesDone = c.changesDone, nil
	out.SelfUpdate, c.selfUpdate = c.selfUpdate, nil
	return out, nil
}

// fail makes err sticky.
func (c *Core) fail(err error) error {
	c.failed = fmt.Errorf("%w: %w", ErrFailed, err)
	c.logger.Error("quorum core failed; restart required", "err", err)
	return c.failed
}

// installSnapshot persists a snapshot from the leader, loads it into Raft's
// storage and hands it to the state machine.
func (c *Core) installSnapshot(snap *raftpb.Snapshot) (*SnapshotInfo, error) {
	md := snap.GetMetadata()
	if !c.dynamic && !hasMembership(snap.GetData()) && !sameIDs(md.GetConfState().GetVoters(), c.cfg.Voters) {
		return nil, fmt.Errorf("snapshot at index %d records voters %v, configuration says %v", md.GetIndex(), md.GetConfState().GetVoters(), c.cfg.Voters)
	}
	data, err := c.adoptSnapshotMembership(snap)
	if err != nil {
		return nil, err
	}
	if err := c.disk.installSnapshot(snap); err != nil {
		return nil, err
	}
	if err := c.ms.ApplySnapshot(snap); err != nil {
		return nil, fmt.Errorf("apply snapshot at index %d: %w", md.GetIndex(), err)
	}
	if err := c.cfg.Snapshotter.Restore(md.GetIndex(), data); err != nil {
		return nil, fmt.Errorf("restore snapshot at index %d: %w", md.GetIndex(), err)
	}
	c.applied, c.snapIndex = md.GetIndex(), md.GetIndex()
	c.snapshotDue = c.snapIndex + c.cfg.SnapshotEntries
	c.logger.Info("installed snapshot from leader", "index", md.GetIndex(), "term", md.GetTerm(), "bytes", len(snap.GetData()))
	return &SnapshotInfo{Index: md.GetIndex(), Term: md.GetTerm()}, nil
}

// maybeSnapshot snapshots the state machine once SnapshotEntries entries
// were applied since the last snapshot, then compacts the log, keeping
// KeepEntries entries behind the snapshot for followers that lag a little.
func (c *Core) maybeSnapshot() error {
	if c.applied < c.snapshotDue {
		return nil
	}
	data, err := c.cfg.Snapshotter.Snapshot()
	if err != nil {
		// Only the log's growth depends on it: try again later.
		c.snapshotDue = c.applied + max(c.cfg.SnapshotEntries/10, 1)
		c.logger.Warn("state machine snapshot failed; postponed", "index", c.applied, "retry_at", c.snapshotDue, "err", err)
		return nil
	}
	if c.dynamic {
		if data, err = wrapSnapshot(c.Membership(), data); err != nil {
			return err
		}
	}
	snap, err := c.ms.CreateSnapshot(c.applied, c.confState, data)
	if err != nil {
		return fmt.Errorf("create snapshot at index %d: %w", c.applied, err)
	}
	compactIndex := c.applied - min(c.applied, c.cfg.KeepEntries)
	first, _ := c.ms.FirstIndex()
	if compactIndex < first {
		compactIndex = 0 // nothing new to drop
	}
	if err := c.disk.compact(snap, compactIndex); err != nil {
		return err
	}
	if compactIndex > 0 {
		if err := c.ms.Compact(compactIndex); err != nil {
			return fmt.Errorf("compact raft storage to index %d: %w", compactIndex, err)
		}
	}
	c.snapIndex = c.applied
	c.snapshotDue = c.snapIndex + c.cfg.SnapshotEntries
	c.logger.Info("snapshot taken", "index", c.applied, "bytes", len(data), "compacted_to", compactIndex)
	return nil
}
