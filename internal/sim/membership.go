package sim

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/quorum"
)

// Voter changes (FaultMix.Membership): the metadata quorum is dynamic
// (KIP-853). Node 1 founds it alone; an operator adds the others through
// the AddRaftVoter backend the API handler calls, and during the faulty
// phase removes voters and adds them back, one change at a time, while
// the other faults go on. At healing every node is wanted as a voter
// again, and the run converges only once the quorum says so.
//
// Checked for every run, dynamic or not: at most one quorum leader per
// term, and every committed metadata entry is the same at its index on
// every node and in every incarnation (what was committed is never lost
// or replaced).

// membershipPeriod is how often the operator looks at the quorum.
const membershipPeriod = 300 * time.Millisecond

// voterChangeTimeout is AddRaftVoter's timeout as the operator sends it.
const voterChangeTimeout = 5 * time.Second

// quorumChecks are the quorum-level invariants.
type quorumChecks struct {
	termLeader map[uint64]int32  // Raft term -> the node that led it
	committed  map[uint64]uint64 // index -> hash of the committed entry
}

func newQuorumChecks() quorumChecks {
	return quorumChecks{termLeader: map[uint64]int32{}, committed: map[uint64]uint64{}}
}

// onQuorumLeader: one leader per term, across every node and restart.
func (c *Cluster) onQuorumLeader(n *node, term uint64) {
	q := &c.check.quorum
	if prev, ok := q.termLeader[term]; ok && prev != n.id {
		c.violation("two quorum leaders in term %d: n%d and n%d", term, prev, n.id)
		return
	}
	q.termLeader[term] = n.id
}

// onCommitted: a committed entry never changes at its index.
func (c *Cluster) onCommitted(n *node, e quorum.Entry) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d:", e.Term)
	h.Write(e.Data)
	sum := h.Sum64()
	q := &c.check.quorum
	if prev, ok := q.committed[e.Index]; ok && prev != sum {
		c.violation("%s applied a different committed metadata entry at index %d (term %d)", n, e.Index, e.Term)
		return
	}
	q.committed[e.Index] = sum
}

// controllerPort is a simulated controller listener's first port.
const controllerPort = 9093

// member is node n's record in the dynamic quorum, with the port its
// current process listens on.
func (n *node) member() quorum.Member {
	return quorum.Member{NodeID: n.id, DirectoryID: n.dirID,
		Listeners: []quorum.Listener{{Name: "CONTROLLER", Host: n.String(), Port: n.port}}}
}

// voterOps is the operator changing the voters.
type voterOps struct {
	c *Cluster
	// want is the requested voter set; the operator moves the quorum
	// towards it one change at a time.
	want map[int32]bool
	// asked is the process a change is in flight at (nil: none); a
	// process that dies never answers, so its death ends the wait.
	asked *process
	// changed counts the operator's changes that completed.
	added, removed, upgraded int
}

func newVoterOps(c *Cluster) *voterOps {
	v := &voterOps{c: c, want: map[int32]bool{}}
	for _, id := range c.ids {
		v.want[id] = true
	}
	return v
}

// quorumLeader is the process leading the quorum with the newest term.
func (c *Cluster) quorumLeader() *process {
	return c.newestWhere(func(p *process) bool { return p.core.IsLeader() })
}

func (v *voterOps) loop() {
	c := v.c
	if c.stopped {
		return
	}
	c.s.after(membershipPeriod, v.loop)
	if v.asked != nil && v.asked.n.proc == v.asked {
		return
	}
	v.asked = nil
	if !c.healed && c.s.chance(0.1) {
		v.toggle()
	}
	p := c.quorumLeader()
	if p == nil {
		return
	}
	if p.core.KRaftVersion() == quorum.KRaftVersionStatic {
		// FaultMix.Upgrade: kafka-features upgrade --feature
		// kraft.version=1 first; refused until the leader has every
		// voter's record, so asked again next period.
		v.asked = p
		c.tracef("operator: upgrading the quorum to kraft.version 1 (through n%d)", p.n.id)
		simQuorumAdmin{p}.UpgradeKRaft(false, voterChangeTimeout, func(err error) {
			if v.asked == p {
				v.asked = nil
			}
			c.tracef("operator: kraft.version upgrade: %v", err)
			if err == nil {
				v.upgraded++
			}
		})
		return
	}
	// The operator reads the quorum as kafka-metadata-quorum does.
	simQuorumAdmin{p}.DescribeQuorum(func(d api.QuorumDescription, err error) {
		if err != nil || c.stopped {
			return
		}
		v.step(p, d)
	})
}

// toggle changes the request: a voter to remove, or a removed node back.
func (v *voterOps) toggle() {
	c := v.c
	id := c.ids[c.s.rng.IntN(len(c.ids))]
	wanted := 0
	for _, w := range v.want {
		if w {
			wanted++
		}
	}
	if v.want[id] && wanted <= 1 {
		return
	}
	v.want[id] = !v.want[id]
	c.tracef("operator now wants n%d as a voter: %v", id, v.want[id])
}

// step makes the next change towards want, if any.
func (v *voterOps) step(p *process, d api.QuorumDescription) {
	c := v.c
	voters := map[int32]quorum.Member{}
	for _, r := range d.Voters {
		voters[r.NodeID] = r.Member
	}
	done := func(what string, id int32) func(error) {
		return func(err error) {
			if v.asked == p {
				v.asked = nil
			}
			if err != nil {
				c.tracef("operator: %s n%d: %v", what, id, err)
				return
			}
			c.tracef("operator: %s n%d done", what, id)
			if what == "add" {
				v.added++
			} else {
				v.removed++
			}
		}
	}
	for _, id := range c.ids {
		if v.want[id] && voters[id].NodeID != id {
			v.asked = p
			c.tracef("operator: adding n%d as a voter (through n%d)", id, p.n.id)
			simQuorumAdmin{p}.AddRaftVoter(c.nodes[id].member(), voterChangeTimeout, done("add", id))
			return
		}
	}
	for _, id := range c.ids {
		if m, ok := voters[id]; ok && !v.want[id] {
			v.asked = p
			c.tracef("operator: removing voter n%d (through n%d)", id, p.n.id)
			simQuorumAdmin{p}.RemoveRaftVoter(id, m.DirectoryID, done("remove", id))
			return
		}
	}
}

// heal wants every node as a voter again.
func (v *voterOps) heal() {
	for _, id := range v.c.ids {
		v.want[id] = true
	}
}

// membershipReport is why the quorum's voters are not yet every node.
func (c *Cluster) membershipReport() string {
	if c.voters == nil {
		return ""
	}
	for _, id := range c.ids {
		p := c.nodes[id].proc
		if p == nil {
			return fmt.Sprintf("n%d is down", id)
		}
		ms := p.core.Membership()
		for _, want := range c.ids {
			if _, ok := ms.Voter(want); !ok {
				return fmt.Sprintf("n%d does not count n%d among the voters yet", id, want)
			}
		}
		if len(ms.Voters) != len(c.ids) || len(ms.Learners) > 0 {
			return fmt.Sprintf("n%d has voters %v and learners %v", id, memberIDs(ms.Voters), memberIDs(ms.Learners))
		}
		for _, v := range ms.Voters {
			if want := c.nodes[v.NodeID].member().Listeners; !slices.Equal(v.Listeners, want) {
				return fmt.Sprintf("n%d records voter n%d at %v, it listens at %v", id, v.NodeID, v.Listeners, want)
			}
		}
	}
	return ""
}

// finalMembership: the quorum ends as the operator requested (every node
// a voter, with its own directory id) on every node.
func (k *checker) finalMembership() bool {
	c := k.c
	if c.voters == nil {
		return true
	}
	for _, id := range c.ids {
		ms := c.nodes[id].proc.core.Membership()
		got := make([]int32, 0, len(ms.Voters))
		for _, m := range ms.Voters {
			got = append(got, m.NodeID)
			if m.DirectoryID != c.nodes[m.NodeID].dirID {
				c.violation("n%d records voter n%d with directory id %x, its disk's is %x", id, m.NodeID, m.DirectoryID, c.nodes[m.NodeID].dirID)
				return false
			}
			if want := c.nodes[m.NodeID].member().Listeners; !slices.Equal(m.Listeners, want) {
				c.violation("n%d records voter n%d at %v, it listens at %v (UpdateRaftVoter never took)", id, m.NodeID, m.Listeners, want)
				return false
			}
		}
		if !slices.Equal(got, c.ids) {
			c.violation("n%d ends with voters %v, requested %v", id, got, c.ids)
			return false
		}
	}
	return true
}

// simQuorumAdmin is api.QuorumBackend over a process's Core: what
// node.quorumAdmin does with the Raft goroutine, done on the event queue.
type simQuorumAdmin struct{ p *process }

func (q simQuorumAdmin) DescribeQuorum(done func(api.QuorumDescription, error)) {
	d, err := q.p.core.Describe()
	done(api.QuorumDescription{Description: d}, err)
}

func (q simQuorumAdmin) AddRaftVoter(m quorum.Member, timeout time.Duration, done func(error)) {
	q.change(func() error { return q.p.core.AddVoter(m) }, timeout, done)
}

func (q simQuorumAdmin) RemoveRaftVoter(nodeID int32, dir [16]byte, done func(error)) {
	q.change(func() error { return q.p.core.RemoveVoter(nodeID, dir) }, voterChangeTimeout, done)
}

func (q simQuorumAdmin) UpdateRaftVoter(m quorum.Member, leaderEpoch int32, kraft quorum.VersionRange, done func(error)) {
	q.change(func() error { return q.p.core.UpdateVoter(m, leaderEpoch, kraft) }, voterChangeTimeout, done)
}

func (q simQuorumAdmin) UpgradeKRaft(validateOnly bool, timeout time.Duration, done func(error)) {
	q.change(func() error { return q.p.core.UpgradeKRaft(validateOnly) }, timeout, done)
}

func (q simQuorumAdmin) KRaftVersion() int16 { return q.p.core.KRaftVersion() }

func (q simQuorumAdmin) change(start func() error, timeout time.Duration, done func(error)) {
	p := q.p
	if p.quorumChange != nil {
		done(fmt.Errorf("%w: another request's change", quorum.ErrChangePending))
		return
	}
	if err := start(); err != nil {
		done(err)
		return
	}
	w := &quorumChangeWaiter{done: done}
	p.quorumChange = w
	p.n.after(timeout, func() {
		if p.quorumChange == w {
			p.core.AbortChange()
			p.processReady()
		}
	})
	p.processReady()
}

// quorumChangeWaiter is the request waiting for a process's change.
type quorumChangeWaiter struct{ done func(error) }

// quorumOutput handles the quorum-level parts of one Ready.
func (p *process) quorumOutput(out quorum.Output) {
	if out.Membership != nil {
		p.n.tracef("quorum voters %v, learners %v", memberIDs(out.Membership.Voters), memberIDs(out.Membership.Learners))
	}
	for _, r := range out.Changes {
		if w := p.quorumChange; w != nil {
			p.quorumChange = nil
			w.done(r.Err)
		}
	}
	if u := out.SelfUpdate; u != nil {
		p.sendSelfUpdate(*u)
	}
	if out.SoftState != nil && out.SoftState.RaftState == raft.StateLeader {
		p.n.c.onQuorumLeader(p.n, p.core.Term())
	}
	for _, e := range out.Committed {
		p.n.c.onCommitted(p.n, e)
	}
}

func memberIDs(ms []quorum.Member) []int32 {
	out := make([]int32, len(ms))
	for i, m := range ms {
		out[i] = m.NodeID
	}
	return out
}

// sendSelfUpdate is node.Broker.sendSelfUpdate: the voter's UpdateRaftVoter
// to the leader its Core named, through the API handler there.
func (p *process) sendSelfUpdate(u quorum.VoterUpdate) {
	req := u.UpdateRaftVoterRequest(p.n.c.clusterID)
	p.n.tracef("asking n%d to record its endpoints %v", quorum.NodeID(u.Leader), u.Member.Listeners)
	p.call(quorum.NodeID(u.Leader), req, func(resp kmsg.Response, err error) {
		if err == nil {
			err = kerr.ErrorForCode(resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode)
		}
		if err == nil && p.n.proc == p {
			p.core.SelfUpdateAnswered(u)
			if p.core.KRaftVersion() == quorum.KRaftVersionDynamic {
				p.n.c.check.stats.VotersUpdated++
			}
		}
		p.n.tracef("UpdateRaftVoter to n%d: %v", quorum.NodeID(u.Leader), err)
	})
}
