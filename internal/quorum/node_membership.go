package quorum

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// peerTimes is what the leader saw of one peer, for Describe.
type peerTimes struct {
	lastFetch, lastCaughtUp time.Time
}

// selfAddr is this node's own endpoint for frames: a dynamic quorum's
// node's, or a static one's that knows its record (it may be upgraded to
// kraft.version 1, and then answer a node being added before it is a
// member). "" sends version-0 frames, as before dynamic membership.
func (c NodeConfig) selfAddr() string {
	if !c.Dynamic && !c.UpdateSelf {
		return ""
	}
	return endpoint(c.Self, c.ListenerName)
}

// endpoint is m's host:port on the listener named name (its first one if
// it has no such listener), "" without listeners.
func endpoint(m Member, name string) string {
	if len(m.Listeners) == 0 {
		return ""
	}
	l := m.Listeners[0]
	if i := slices.IndexFunc(m.Listeners, func(l Listener) bool { return l.Name == name }); i >= 0 {
		l = m.Listeners[i]
	}
	return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
}

// Membership is the quorum's current membership; safe from any goroutine.
func (n *Node) Membership() Membership { return *n.membership.Load() }

// membershipChanged publishes a new membership and points the transport
// at its members.
func (n *Node) membershipChanged(ms Membership) {
	n.membership.Store(&ms)
	if !n.core.dynamic {
		return
	}
	n.recordAddrs = map[uint64]string{}
	for _, m := range append(slices.Clone(ms.Voters), ms.Learners...) {
		if addr := endpoint(m, n.cfg.ListenerName); addr != "" {
			n.recordAddrs[RaftID(m.NodeID)] = addr
		}
	}
	for id, addr := range n.senders {
		if n.recordAddrs[id] == addr {
			delete(n.senders, id) // the log names its endpoint now
		}
	}
	n.updatePeers()
	if n.cfg.OnMembershipChange != nil {
		n.cfg.OnMembershipChange(ms)
	}
}

// noteSender records the endpoint a frame from raft id named for its
// sender. A node the configuration does not hold yet (one being added)
// is answered there; so is a member whose record names another endpoint:
// it came back on a new port or host and has not had its record updated
// yet (UpdateRaftVoter), and would otherwise never hear from the leader
// it must ask. Frames on the controller listener are trusted as much as
// the Raft messages they carry; the map is bounded.
func (n *Node) noteSender(id uint64, addr string) {
	if rec, ok := n.recordAddrs[id]; ok && rec == addr {
		if _, had := n.senders[id]; had {
			delete(n.senders, id)
			n.updatePeers()
		}
		return
	}
	if cur, had := n.senders[id]; cur == addr || !had && len(n.senders) >= maxVoters {
		return
	}
	n.senders[id] = addr
	n.updatePeers()
}

// peerSetter is a Transport whose peers follow a dynamic membership.
type peerSetter interface{ SetPeers(addrs map[uint64]string) }

// updatePeers gives the transport every member's endpoint, the one its
// own frames named where that differs (see noteSender), and those of
// non-members that wrote to this node.
func (n *Node) updatePeers() {
	ps, ok := n.transport.(peerSetter)
	if !ok || !n.core.dynamic {
		return
	}
	addrs := maps.Clone(n.recordAddrs)
	if addrs == nil {
		addrs = map[uint64]string{}
	}
	maps.Copy(addrs, n.senders)
	ps.SetPeers(addrs)
}

// notePeer records, on the leader, when a peer answered and whether it
// then held the leader's whole log.
func (n *Node) notePeer(m *raftpb.Message) {
	t := m.GetType()
	if (t != raftpb.MsgAppResp && t != raftpb.MsgHeartbeatResp) || !n.core.IsLeader() || !n.core.isMember(m.GetFrom()) {
		return // only members are tracked, which bounds the map
	}
	now := time.Now()
	pt := n.peerTimes[m.GetFrom()]
	pt.lastFetch = now
	if match, ok := n.core.peerMatch(m.GetFrom()); ok && match >= n.core.lastIndex() {
		pt.lastCaughtUp = now
	}
	n.peerTimes[m.GetFrom()] = pt
}

// onLoop runs f on the Raft goroutine and waits for it to be queued.
func (n *Node) onLoop(ctx context.Context, f func()) error {
	select {
	case n.control <- f:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// AddVoter adds m as a voter (AddRaftVoter): as a learner first, promoted
// once caught up. It returns once the promotion is committed and applied
// here; ErrChangeAborted if ctx ends first (an unfinished add leaves a
// learner: AddVoter again resumes it).
func (n *Node) AddVoter(ctx context.Context, m Member) error {
	return n.change(ctx, func() error { return n.core.AddVoter(m) })
}

// UpdateVoter records m's endpoints for the voter with its node id and
// directory id (UpdateRaftVoter, from that voter) and returns once the
// record is committed and applied here.
func (n *Node) UpdateVoter(ctx context.Context, m Member, leaderEpoch int32, kraft VersionRange) error {
	return n.change(ctx, func() error { return n.core.UpdateVoter(m, leaderEpoch, kraft) })
}

// UpgradeKRaft upgrades a static quorum to kraft.version 1 (UpdateFeatures)
// and returns once the upgrade is committed and applied here.
func (n *Node) UpgradeKRaft(ctx context.Context, validateOnly bool) error {
	return n.change(ctx, func() error { return n.core.UpgradeKRaft(validateOnly) })
}

// KRaftVersion is the quorum's kraft.version as of its latest membership.
func (n *Node) KRaftVersion() int16 {
	if n.Membership().Dynamic {
		return KRaftVersionDynamic
	}
	return KRaftVersionStatic
}

// SelfUpdateAnswered tells the Core the leader answered u (see
// Core.SelfUpdateAnswered); safe from any goroutine.
func (n *Node) SelfUpdateAnswered(ctx context.Context, u VoterUpdate) error {
	return n.onLoop(ctx, func() { n.core.SelfUpdateAnswered(u) })
}

// RemoveVoter removes the member with node id and directory id dir
// (RemoveRaftVoter) and returns once the change is committed and applied
// here.
func (n *Node) RemoveVoter(ctx context.Context, nodeID int32, dir [16]byte) error {
	return n.change(ctx, func() error { return n.core.RemoveVoter(nodeID, dir) })
}

func (n *Node) change(ctx context.Context, start func() error) error {
	done := make(chan error, 1)
	err := n.onLoop(ctx, func() {
		if n.changeDone != nil {
			done <- fmt.Errorf("%w: another request's change", ErrChangePending)
			return
		}
		if err := start(); err != nil {
			done <- err
			return
		}
		n.changeDone = done
	})
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Give the change up; if it ended meanwhile, its result stands.
		_ = n.onLoop(context.Background(), func() {
			if n.changeDone == done {
				n.core.AbortChange()
			}
		})
		select {
		case err := <-done:
			return err
		case <-n.done:
			return ErrStopped
		}
	case <-n.done:
		select {
		case err := <-done:
			return err
		default:
			return ErrStopped
		}
	}
}

// changeEnded resolves the waiting request with a change's result.
func (n *Node) changeEnded(r ChangeResult) {
	if n.changeDone == nil {
		return
	}
	n.changeDone <- r.Err
	n.changeDone = nil
}

// Describe is DescribeQuorum's view from the leader; a *NotLeaderError on
// a follower.
func (n *Node) Describe(ctx context.Context) (Description, error) {
	type answer struct {
		d   Description
		err error
	}
	ch := make(chan answer, 1)
	if err := n.onLoop(ctx, func() {
		d, err := n.core.Describe()
		for _, list := range [][]Replica{d.Voters, d.Learners} {
			for i := range list {
				if id := RaftID(list[i].NodeID); id != n.core.ID() {
					pt := n.peerTimes[id]
					list[i].LastFetch, list[i].LastCaughtUp = pt.lastFetch, pt.lastCaughtUp
				}
			}
		}
		ch <- answer{d, err}
	}); err != nil {
		return Description{}, err
	}
	select {
	case a := <-ch:
		return a.d, a.err
	case <-ctx.Done():
		return Description{}, ctx.Err()
	case <-n.done:
		return Description{}, ErrStopped
	}
}
