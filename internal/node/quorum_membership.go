package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/quorum"
)

// A dynamic metadata quorum (KIP-853, controller.quorum.bootstrap.servers):
// the voters are the quorum's own state. A controller takes its peers'
// endpoints from the membership its quorum node publishes; a broker-only
// node from the membership its observer follows. Until either is known
// (a node that has not caught up yet) the bootstrap servers stand in, as
// voters with placeholder ids (bootstrapVoterID), so there is somewhere to
// fetch the metadata log from.

// describeQuorumTimeout bounds a DescribeQuorum on the leader's loop.
const describeQuorumTimeout = 5 * time.Second

// maxObservers bounds the broker-only nodes DescribeQuorum lists.
const maxObservers = 1024

// controllerVoters are the controllers' endpoints as this node knows them.
func (b *Broker) controllerVoters() []config.Voter {
	if p := b.voters.Load(); p != nil {
		return *p
	}
	return nil
}

func (b *Broker) setControllerVoters(v []config.Voter) {
	v = slices.Clone(v)
	b.voters.Store(&v)
}

// aloneInQuorum reports whether the quorum is this node alone, or (a
// broker-only node) one static controller: it can register at once. A
// node waiting to join a dynamic quorum is not.
func (b *Broker) aloneInQuorum() bool {
	if b.quorum == nil {
		return len(b.cfg.ControllerQuorumBootstrapServers) == 0 && len(b.controllerVoters()) == 1
	}
	ms := b.quorum.Membership()
	return len(ms.Voters) == 1 && ms.Voters[0].NodeID == b.cfg.NodeID
}

// initialVoters are the static voters, or a dynamic quorum's bootstrap
// servers under placeholder ids.
func (b *Broker) initialVoters() []config.Voter {
	if len(b.cfg.ControllerQuorumBootstrapServers) == 0 {
		return b.cfg.ControllerQuorumVoters
	}
	out := make([]config.Voter, 0, len(b.cfg.ControllerQuorumBootstrapServers))
	for i, addr := range b.cfg.ControllerQuorumBootstrapServers {
		host, port, err := splitHostPort(addr)
		if err != nil {
			continue // validated by config
		}
		out = append(out, config.Voter{ID: bootstrapVoterID(i), Host: host, Port: port})
	}
	return out
}

// bootstrapVoterID is the placeholder id of the i-th bootstrap server:
// negative, so it is never taken for a real node's.
func bootstrapVoterID(i int) int32 { return int32(-2 - i) }

// votersOf turns a membership into endpoints on the controller listener.
func (b *Broker) votersOf(ms quorum.Membership) []config.Voter {
	name := controllerListener(b.cfg)
	out := make([]config.Voter, 0, len(ms.Voters))
	for _, m := range ms.Voters {
		i := slices.IndexFunc(m.Listeners, func(l quorum.Listener) bool { return l.Name == name })
		if i < 0 && len(m.Listeners) > 0 {
			i = 0
		}
		if i < 0 {
			continue
		}
		out = append(out, config.Voter{ID: m.NodeID, Host: m.Listeners[i].Host, Port: int(m.Listeners[i].Port)})
	}
	return out
}

// onQuorumMembership runs on the quorum goroutine when a dynamic quorum's
// membership changes.
func (b *Broker) onQuorumMembership(ms quorum.Membership) {
	if !ms.Dynamic {
		return // a static quorum's voters are controller.quorum.voters
	}
	b.observedDynamic.Store(true)
	if voters := b.votersOf(ms); len(voters) > 0 {
		b.setControllerVoters(voters)
	}
}

// followObservedMembership adopts the membership a broker-only node's
// observer has seen in the log, if the quorum is dynamic (or a static one
// was upgraded to kraft.version 1).
func (b *Broker) followObservedMembership(obs *quorum.Observer) {
	if ms, ok := obs.Membership(); ok {
		b.onQuorumMembership(ms)
	}
}

// selfMember is this controller's record in a dynamic quorum: its metadata
// directory's id and its controller endpoint as others should dial it,
// which is what its UpdateRaftVoter asks the leader to record and what its
// Raft frames name: the controller listener's entry in advertised.listeners
// if it has one (Kafka's controllers advertise there too), else the
// listener's own host, or for a wildcard or empty host this machine's
// name (as Kafka advertises an empty host); the port as configured, or as
// bound when configured as 0.
func (b *Broker) selfMember() (quorum.Member, error) {
	l, ok := b.cfg.ControllerListener()
	if !ok {
		return quorum.Member{}, errors.New("no controller listener to run the metadata quorum on")
	}
	_, boundPort, err := splitHostPort(b.Addr(l.Name))
	if err != nil {
		return quorum.Member{}, fmt.Errorf("controller listener address: %w", err)
	}
	host, port := l.Host, l.Port
	if i := slices.IndexFunc(b.cfg.AdvertisedListeners, func(a config.Listener) bool { return a.Name == l.Name }); i >= 0 {
		host, port = b.cfg.AdvertisedListeners[i].Host, b.cfg.AdvertisedListeners[i].Port
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil || host == "" {
			host = "localhost"
		}
	}
	if port == 0 {
		port = boundPort
	}
	if port <= 0 || port > 65535 {
		return quorum.Member{}, fmt.Errorf("controller listener port %d", port)
	}
	return quorum.Member{
		NodeID:      b.cfg.NodeID,
		DirectoryID: b.logDirIDs[0], // the metadata log lives in the first log directory
		Listeners:   []quorum.Listener{{Name: l.Name, Host: host, Port: uint16(port)}},
	}, nil
}

// startDynamicQuorum starts this controller's member of a dynamic quorum.
func (b *Broker) startDynamicQuorum(clusterID string) error {
	self, err := b.selfMember()
	if err != nil {
		return err
	}
	b.setControllerVoters(b.initialVoters())
	cfg := b.quorumConfig(clusterID)
	cfg.Dynamic, cfg.Standalone, cfg.Self = true, b.cfg.ControllerQuorumStandalone, self
	cfg.ListenerName = self.Listeners[0].Name
	cfg.OnMembershipChange = b.onQuorumMembership
	cfg.UpdateSelf, cfg.OnSelfUpdate = true, b.sendSelfUpdate
	if err := b.startQuorumNode(cfg); err != nil {
		return err
	}
	b.onQuorumMembership(b.quorum.Membership())
	return nil
}

// observerTable records the broker-only nodes fetching the metadata log
// from this controller, for DescribeQuorum's observers.
type observerTable struct {
	mu   sync.Mutex
	seen map[int32]observerSeen
}

type observerSeen struct {
	logEndOffset int64
	lastFetch    time.Time
	caughtUp     time.Time
}

// note records a fetch from node id at offset, and whether it had caught
// up with the committed log (offset == high watermark).
func (t *observerTable) note(id int32, offset, highWatermark int64, now time.Time) {
	if id < 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[int32]observerSeen{}
	}
	s, known := t.seen[id]
	if !known && len(t.seen) >= maxObservers {
		return
	}
	s.logEndOffset, s.lastFetch = offset, now
	if offset >= highWatermark {
		s.caughtUp = now
	}
	t.seen[id] = s
}

func (t *observerTable) list(skip func(int32) bool) []quorum.Replica {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []quorum.Replica
	for id, s := range t.seen {
		if skip(id) {
			continue
		}
		out = append(out, quorum.Replica{Member: quorum.Member{NodeID: id}, LogEndOffset: s.logEndOffset,
			LastFetch: s.lastFetch, LastCaughtUp: s.caughtUp})
	}
	slices.SortFunc(out, func(a, b quorum.Replica) int { return int(a.NodeID) - int(b.NodeID) })
	return out
}

// quorumAdmin serves DescribeQuorum, AddRaftVoter and RemoveRaftVoter on
// the quorum leader, each on its own goroutine (they wait on the Raft
// loop and, for changes, on commits).
type quorumAdmin struct{ b *Broker }

func (q quorumAdmin) DescribeQuorum(done func(api.QuorumDescription, error)) {
	b := q.b
	if b.quorum == nil {
		done(api.QuorumDescription{}, kerr.NotController)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), describeQuorumTimeout)
		defer cancel()
		d, err := b.quorum.Describe(ctx)
		if err != nil {
			done(api.QuorumDescription{}, quorumAdminError(err))
			return
		}
		if !d.Dynamic {
			// A static quorum's records carry no endpoints: they are
			// configuration.
			name := controllerListener(b.cfg)
			for i := range d.Voters {
				for _, v := range b.controllerVoters() {
					if v.ID == d.Voters[i].NodeID && v.Port > 0 && v.Port <= 65535 {
						d.Voters[i].Listeners = []quorum.Listener{{Name: name, Host: v.Host, Port: uint16(v.Port)}}
					}
				}
			}
		}
		isMember := func(id int32) bool {
			return slices.ContainsFunc(append(slices.Clone(d.Voters), d.Learners...), func(r quorum.Replica) bool { return r.NodeID == id })
		}
		done(api.QuorumDescription{Description: d, Observers: b.metadataObservers.list(isMember)}, nil)
	}()
}

func (q quorumAdmin) AddRaftVoter(m quorum.Member, timeout time.Duration, done func(error)) {
	q.change(timeout, done, func(ctx context.Context) error { return q.b.quorum.AddVoter(ctx, m) })
}

func (q quorumAdmin) UpdateRaftVoter(m quorum.Member, leaderEpoch int32, kraft quorum.VersionRange, done func(error)) {
	q.change(commitTimeout, done, func(ctx context.Context) error { return q.b.quorum.UpdateVoter(ctx, m, leaderEpoch, kraft) })
}

func (q quorumAdmin) UpgradeKRaft(validateOnly bool, timeout time.Duration, done func(error)) {
	q.change(timeout, done, func(ctx context.Context) error { return q.b.quorum.UpgradeKRaft(ctx, validateOnly) })
}

// KRaftVersion is 1 on a controller whose quorum's voters are the log's,
// and on a broker-only node that follows a dynamic quorum (configured
// with controller.quorum.bootstrap.servers, or that saw the upgrade).
func (q quorumAdmin) KRaftVersion() int16 {
	switch {
	case q.b.quorum != nil:
		return q.b.quorum.KRaftVersion()
	case len(q.b.cfg.ControllerQuorumBootstrapServers) > 0 || q.b.observedDynamic.Load():
		return quorum.KRaftVersionDynamic
	}
	return quorum.KRaftVersionStatic
}

func (q quorumAdmin) RemoveRaftVoter(nodeID int32, dir [16]byte, done func(error)) {
	q.change(commitTimeout, done, func(ctx context.Context) error { return q.b.quorum.RemoveVoter(ctx, nodeID, dir) })
}

// change runs a membership change on its own goroutine, bounded by
// timeout.
func (q quorumAdmin) change(timeout time.Duration, done func(error), run func(context.Context) error) {
	if q.b.quorum == nil {
		done(kerr.NotController)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		done(quorumAdminError(run(ctx)))
	}()
}

// quorumAdminError makes a wait that ran out REQUEST_TIMED_OUT.
func quorumAdminError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", quorum.ErrChangeAborted, err)
	}
	if errors.Is(err, quorum.ErrStopped) {
		return fmt.Errorf("%w: %v", kerr.NotController, err)
	}
	return err
}

// selfUpdateTimeout bounds one UpdateRaftVoter this controller sends.
const selfUpdateTimeout = 10 * time.Second

// sendSelfUpdate sends the UpdateRaftVoter the quorum asks for to the
// leader, on its own goroutine (it runs on the Raft goroutine), one at a
// time: the quorum asks again while its record stays stale.
func (b *Broker) sendSelfUpdate(u quorum.VoterUpdate) {
	if !b.selfUpdating.CompareAndSwap(false, true) {
		return
	}
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		defer b.selfUpdating.Store(false)
		ctx, cancel := context.WithTimeout(b.stopCtx, selfUpdateTimeout)
		defer cancel()
		req := u.UpdateRaftVoterRequest(b.Image().ClusterID())
		resp, err := b.ctrl.request(ctx, req)
		if err == nil {
			err = kerr.ErrorForCode(resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode)
		}
		if err != nil {
			b.log.Info("UpdateRaftVoter to the quorum leader failed; the quorum asks again", "leader", quorum.NodeID(u.Leader), "err", err)
			return
		}
		if err := b.quorum.SelfUpdateAnswered(ctx, u); err != nil {
			b.log.Debug("could not note the UpdateRaftVoter answer; the quorum asks again", "err", err)
		}
		b.log.Info("the quorum leader has this controller's record", "leader", quorum.NodeID(u.Leader), "endpoints", u.Member.Listeners)
	}()
}
