package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Errors of Node.
var (
	// ErrStopped: the node was stopped (or failed) before the proposal
	// resolved.
	ErrStopped = errors.New("quorum node stopped")
	// ErrProposalDropped: the entry can no longer commit (another leader's
	// entries replaced it). Retrying is safe.
	ErrProposalDropped = errors.New("quorum proposal dropped")
	// ErrOutcomeUnknown: a snapshot replaced the log around the entry, so
	// whether it committed is unknown; the caller re-reads the state.
	ErrOutcomeUnknown = errors.New("quorum proposal outcome unknown")
	// ErrBusy: too many proposals or inbound messages are queued.
	ErrBusy = errors.New("quorum node busy")
)

// Node runs a Core on its own goroutine with a ticker, a Transport,
// inbound messages and proposals. All methods are safe for concurrent use.
type Node struct {
	cfg       NodeConfig
	logger    *slog.Logger
	core      *Core
	transport Transport
	tag       uint64 // incarnation: tags this process's proposals

	inbound   chan inboundMsg
	proposals chan proposal
	reports   chan report
	reads     chan readRequest
	// control runs operations on the loop goroutine (membership changes,
	// Describe), which owns the Core.
	control chan func()

	// membership is the latest Membership, for readers on any goroutine.
	membership atomic.Pointer[Membership]

	leader atomic.Int32 // node id of the known leader, -1 if none
	isLead atomic.Bool
	term   atomic.Uint64 // the current Raft term

	// applied is the last index applied here (all committed), for
	// observers; appliedCh is closed and replaced whenever it moves.
	applied   atomic.Uint64
	appliedMu sync.Mutex
	appliedCh chan struct{}

	stop     chan struct{} // Stop: hand the leadership over, then stop
	stopOnce sync.Once
	halt     chan struct{} // Halt: stop now
	haltOnce sync.Once
	done     chan struct{}
	err      error // why the loop ended; read after done

	// Owned by the loop goroutine.
	seq         uint64
	waiters     map[uint64]*waiter // by proposal sequence number
	appliedTerm uint64             // term of the last entry applied
	readIdx     readIndexes
	// changeDone resolves the membership change in flight, nil if none.
	changeDone chan error
	// senders are endpoints frames named for their senders where the
	// configuration holds none or another (see noteSender), so this node
	// can answer them; recordAddrs are the members' recorded endpoints.
	senders     map[uint64]string
	recordAddrs map[uint64]string
	// peerTimes is the leader's record of when each peer last answered
	// and last was caught up, for Describe.
	peerTimes map[uint64]peerTimes
}

type inboundMsg struct {
	m      *raftpb.Message
	sender string // the frame's sender endpoint, "" if none
}

type proposal struct {
	data []byte
	done chan error // buffered: the loop never blocks on it
}

type waiter struct {
	term uint64 // the leader's term when the entry was appended
	done chan error
}

type report struct {
	id        uint64
	snapshot  bool // a MsgSnap outcome
	down      bool // id's process is gone (Reporter.ReportDown)
	delivered bool
}

// StartNode opens the Core from disk (restoring the snapshot), starts the
// transport, replays the committed entries of the local log through Apply
// and starts the Raft loop.
func StartNode(cfg NodeConfig) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	coreCfg, err := cfg.coreConfig()
	if err != nil {
		return nil, err
	}
	transport := cfg.Transport
	if transport == nil {
		if transport, err = NewTCPTransport(TCPTransportConfig{
			ClusterID: cfg.ClusterID, Self: coreCfg.ID, Peers: cfg.Voters, LocalAddr: cfg.LocalAddr, Secure: cfg.Secure,
			Sender: cfg.selfAddr(), MaxFrameBytes: DefaultMaxFrameBytes, Logger: cfg.Logger,
		}); err != nil {
			return nil, err
		}
	}
	core, err := NewCore(coreCfg)
	if err != nil {
		_ = transport.Close()
		return nil, err
	}
	n := &Node{
		cfg:       cfg,
		logger:    cfg.Logger.With("node", cfg.NodeID),
		core:      core,
		transport: transport,
		tag:       rand.Uint64(),
		inbound:   make(chan inboundMsg, inboundQueueLen),
		proposals: make(chan proposal, proposalQueueLen),
		reports:   make(chan report, reportQueueLen),
		control:   make(chan func(), controlQueueLen),
		senders:   map[uint64]string{},
		peerTimes: map[uint64]peerTimes{},
		reads:     make(chan readRequest, readQueueLen),
		stop:      make(chan struct{}),
		halt:      make(chan struct{}),
		done:      make(chan struct{}),
		waiters:   map[uint64]*waiter{},
		appliedCh: make(chan struct{}),
	}
	n.leader.Store(-1)
	n.applied.Store(core.Applied())
	n.membershipChanged(core.Membership())
	if err := transport.Start(n); err != nil {
		_ = transport.Close()
		_ = core.Close()
		return nil, fmt.Errorf("start quorum transport: %w", err)
	}
	// Replay what this node's own log holds as committed before the loop
	// takes any message: the state machine starts from its local state,
	// and only then learns from the leader what it missed (a broker keeps
	// to its roles until it has caught up; see metadata.Image.CaughtUpFor).
	// Messages arriving meanwhile wait in the inbound queue.
	if err := n.ready(); err != nil {
		_ = transport.Close()
		_ = core.Close()
		return nil, fmt.Errorf("replay the local metadata log: %w", err)
	}
	go n.run()
	return n, nil
}

// Stop stops the node cleanly: a leader first hands its leadership over
// (Core.Resign) and waits, at most an election timeout, until another
// leader is known or the transfer failed (Core.Resigned); then the loop,
// the transport and the storage stop. It returns the error that had failed
// the node, if any. The peers must still reach this node meanwhile (its
// listener open): the successor's election and first message answer here.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { close(n.stop) })
	<-n.done
	return n.err
}

// Halt stops the node at once, as a crash would, without handing the
// leadership over; it also cuts short a Stop's handover.
func (n *Node) Halt() error {
	n.haltOnce.Do(func() { close(n.halt) })
	<-n.done
	return n.err
}

// Done is closed when the node has stopped, by Stop or by a storage error
// (see Err).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is why the node stopped; nil while running or after a clean Stop.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.err
	default:
		return nil
	}
}

// Leader is the node id of the leader this node knows of, -1 if none.
func (n *Node) Leader() int32 { return n.leader.Load() }

// IsLeader reports whether this node is the leader.
func (n *Node) IsLeader() bool { return n.isLead.Load() }

// Step hands the node a message from a peer without blocking: when the
// inbound queue is full the message is dropped (ErrBusy) and Raft's
// retransmission covers it.
func (n *Node) Step(m *raftpb.Message) error { return n.StepFrom(m, "") }

// StepFrom is Step for a frame that named its sender's endpoint (see
// HandleRaftFrameFrom).
func (n *Node) StepFrom(m *raftpb.Message, sender string) error {
	select {
	case <-n.done:
		return ErrStopped
	default:
	}
	select {
	case n.inbound <- inboundMsg{m: m, sender: sender}:
		return nil
	default:
		return fmt.Errorf("%w: inbound raft queue full", ErrBusy)
	}
}

// ReportUnreachable implements Reporter.
func (n *Node) ReportUnreachable(id uint64) { n.queueReport(report{id: id}) }

// ReportDown implements Reporter.
func (n *Node) ReportDown(id uint64) { n.queueReport(report{id: id, down: true}) }

// ReportSnapshot implements Reporter.
func (n *Node) ReportSnapshot(id uint64, delivered bool) {
	n.queueReport(report{id: id, snapshot: true, delivered: delivered})
}

func (n *Node) queueReport(r report) {
	select {
	case n.reports <- r:
	default: // a lost report only delays Raft's reaction
	}
}

// Propose replicates data and returns once it is committed and applied on
// this node (Apply has returned for it). On a follower it fails at once with
// a *NotLeaderError naming the leader (use its LeaderNode). If ctx ends
// first the entry may still commit later.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	if !n.isLead.Load() {
		return notLeader(n.leader.Load())
	}
	p := proposal{data: data, done: make(chan error, 1)}
	select {
	case n.proposals <- p:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		// The loop resolves every waiter before closing done.
		select {
		case err := <-p.done:
			return err
		default:
			return ErrStopped
		}
	}
}

// run is the Raft loop: one event (tick, message, proposal, report), then
// whatever else is already queued, then Ready.
func (n *Node) run() {
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer func() {
		ticker.Stop()
		_ = n.transport.Close()
		if err := n.core.Close(); err != nil && n.err == nil {
			n.err = err
		}
		n.resolveAll(ErrStopped)
		n.failReads(ErrStopped)
		close(n.done)
	}()
	stop := n.stop // nil once a handover is under way
	for {
		select {
		case <-n.halt:
			return
		case <-stop:
			// A leader hands over first (Core.Resign); the loop runs on
			// until that is over (Core.Resigned, checked below).
			if n.core.Resign(n.peersStopping()...) == 0 {
				return
			}
			stop = nil
		case <-ticker.C:
			n.core.Tick()
			n.readTick()
		case m := <-n.inbound:
			n.step(m)
		case p := <-n.proposals:
			n.propose(p)
		case r := <-n.reports:
			n.report(r)
		case f := <-n.control:
			f()
		case r := <-n.reads:
			n.queueRead(r)
		}
		n.drainQueued()
		if err := n.ready(); err != nil {
			n.err = err
			n.logger.Error("quorum node stopped by a storage error", "err", err)
			return
		}
		if stop == nil && n.core.Resigned() {
			if n.core.IsLeader() || n.core.Leader() == 0 {
				n.logger.Warn("quorum leadership handover did not complete within an election timeout; stopping anyway", "term", n.core.Term())
			} else {
				n.logger.Info("quorum leadership handed over; stopping", "leader", NodeID(n.core.Leader()), "term", n.core.Term())
			}
			return
		}
	}
}

// peersStopping is the raft ids of the peers NodeConfig.PeersStopping
// names.
func (n *Node) peersStopping() []uint64 {
	if n.cfg.PeersStopping == nil {
		return nil
	}
	var ids []uint64
	for _, id := range n.cfg.PeersStopping() {
		ids = append(ids, RaftID(id))
	}
	return ids
}

// drainQueued takes events that are already waiting, up to a bound.
func (n *Node) drainQueued() {
	for range maxEventsPerRound {
		select {
		case m := <-n.inbound:
			n.step(m)
		case p := <-n.proposals:
			n.propose(p)
		case r := <-n.reports:
			n.report(r)
		case f := <-n.control:
			f()
		case r := <-n.reads:
			n.queueRead(r)
		default:
			return
		}
	}
}

func (n *Node) step(in inboundMsg) {
	m := in.m
	if in.sender != "" && n.core.dynamic {
		n.noteSender(m.GetFrom(), in.sender)
	}
	if err := n.core.Step(m); err != nil {
		n.logger.Debug("raft message refused", "err", err)
		return
	}
	n.notePeer(m)
}

func (n *Node) report(r report) {
	if r.down {
		n.peerDown(r.id)
		return
	}
	if r.snapshot {
		n.core.ReportSnapshot(r.id, r.delivered)
		return
	}
	n.core.ReportUnreachable(r.id)
}

// peerDown is told by the transport that a peer's process is gone; the
// Core decides what that changes (a dead leader is replaced at once, see
// Core.PeerDown).
func (n *Node) peerDown(id uint64) {
	if err := n.core.PeerDown(id); err != nil {
		n.logger.Warn("cannot forget the dead leader", "leader", NodeID(id), "err", err)
	}
}

// propose hands one proposal to Raft and registers its waiter.
func (n *Node) propose(p proposal) {
	if len(n.waiters) >= maxPendingProposals {
		p.done <- fmt.Errorf("%w: %d proposals pending", ErrBusy, len(n.waiters))
		return
	}
	n.seq++
	tag := proposalTag{incarnation: n.tag, seq: n.seq}
	if err := n.core.Propose(encodeProposal(tag, p.data)); err != nil {
		p.done <- err
		return
	}
	n.waiters[tag.seq] = &waiter{term: n.core.Term(), done: p.done}
}

// ready persists and applies until the Core has nothing left.
func (n *Node) ready() error {
	for {
		out, err := n.core.Ready()
		if err != nil {
			return err
		}
		if out.Membership != nil {
			n.membershipChanged(*out.Membership)
		}
		n.transport.Send(out.Messages)
		if out.Restored != nil {
			n.restored(*out.Restored)
		}
		for _, r := range out.Changes {
			n.changeEnded(r)
		}
		if out.SelfUpdate != nil && n.cfg.OnSelfUpdate != nil {
			n.cfg.OnSelfUpdate(*out.SelfUpdate)
		}
		for _, e := range out.Committed {
			n.apply(e)
		}
		n.term.Store(n.core.Term())
		if out.SoftState != nil {
			n.leaderChanged(NodeID(out.SoftState.Lead), n.core.IsLeader())
		}
		n.publishApplied(n.core.Applied())
		for _, rs := range out.ReadStates {
			n.readAnswered(rs.RequestCtx, rs.Index)
		}
		if !n.core.HasReady() {
			return nil
		}
	}
}

// apply delivers one committed entry and resolves the proposals it decides.
func (n *Node) apply(e Entry) {
	if e.Term > n.appliedTerm {
		// Terms never decrease along the log: a pending entry from an
		// older term that has not been applied yet never will be.
		n.appliedTerm = e.Term
		for seq, w := range n.waiters {
			if w.term < e.Term {
				w.done <- ErrProposalDropped
				delete(n.waiters, seq)
			}
		}
	}
	if len(e.Data) == 0 {
		return // a new leader's empty entry
	}
	tag, data, ok := decodeProposal(e.Data)
	if !ok {
		// Every node skips it alike, so the state machines still agree.
		n.logger.Error("skipping committed entry with an unknown envelope", "index", e.Index, "bytes", len(e.Data))
		return
	}
	n.cfg.Apply(e.Index, data)
	if tag.incarnation != n.tag {
		return
	}
	if w := n.waiters[tag.seq]; w != nil {
		w.done <- nil
		delete(n.waiters, tag.seq)
	}
}

// restored resolves proposals a received snapshot may have swallowed.
func (n *Node) restored(s SnapshotInfo) {
	n.appliedTerm = max(n.appliedTerm, s.Term)
	for seq, w := range n.waiters {
		if w.term <= s.Term {
			w.done <- ErrOutcomeUnknown
			delete(n.waiters, seq)
		}
	}
}

func (n *Node) leaderChanged(leader int32, isLeader bool) {
	n.isLead.Store(isLeader)
	if n.leader.Swap(leader) == leader {
		return
	}
	n.logger.Info("quorum leader changed", "leader", leader, "term", n.core.Term())
	clear(n.peerTimes) // a new leader hears its peers afresh
	if n.cfg.OnLeaderChange != nil {
		n.cfg.OnLeaderChange(leader)
	}
}

// publishApplied makes a new applied index visible to observers' reads
// and wakes those waiting for one.
func (n *Node) publishApplied(index uint64) {
	if n.applied.Load() == index {
		return
	}
	n.applied.Store(index)
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
}

// AppliedChanged is closed when the applied index next moves. Take it
// before ReadCommitted, so no change between the two is missed.
func (n *Node) AppliedChanged() <-chan struct{} {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	return n.appliedCh
}

// AppliedIndex is the last index applied here (every one committed).
func (n *Node) AppliedIndex() uint64 { return n.applied.Load() }

// Term is the current Raft term (KRaft's leader epoch).
func (n *Node) Term() uint64 { return n.term.Load() }

// ReadCommitted serves an observer: committed entries from index from, at
// most maxBytes of them (at least one), or Compacted when the observer
// must load LatestSnapshot first.
func (n *Node) ReadCommitted(from, maxBytes uint64) (ObserverRead, error) {
	return n.core.readCommitted(from, n.applied.Load(), maxBytes)
}

// LatestSnapshot is this node's latest snapshot: its index and term, and
// the state machine's bytes. Index 0 means none yet.
func (n *Node) LatestSnapshot() (SnapshotInfo, []byte, error) {
	snap, err := n.core.ms.Snapshot()
	if err != nil {
		return SnapshotInfo{}, nil, fmt.Errorf("quorum: read snapshot: %w", err)
	}
	md := snap.GetMetadata()
	return SnapshotInfo{Index: md.GetIndex(), Term: md.GetTerm()}, snap.GetData(), nil
}

// resolveAll fails every pending proposal.
func (n *Node) resolveAll(err error) {
	for seq, w := range n.waiters {
		w.done <- err
		delete(n.waiters, seq)
	}
	if n.changeDone != nil {
		n.changeDone <- err
		n.changeDone = nil
	}
	for {
		select {
		case p := <-n.proposals:
			p.done <- err
		default:
			return
		}
	}
}

// notLeader builds the error for a node that knows leader (a node id, -1 if
// none).
func notLeader(leader int32) *NotLeaderError {
	if leader < 0 {
		return &NotLeaderError{}
	}
	return &NotLeaderError{Leader: RaftID(leader)}
}
