package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/replicafetch"
)

// fetcher runs the replicafetch.Session internal/node runs for one
// leader, on the event queue: it sends what the session asks for over the
// simulated network, carries out the actions the answers lead to
// (truncate, restart, append and fsync, node_partition.go) and only then
// asks again. One request in flight.
type fetcher struct {
	p       *process
	leader  int32
	sess    *replicafetch.Session[*replica]
	busy    bool
	stopped bool
}

const maxTruncationRounds = 16

func newFetcher(p *process, leader int32) *fetcher {
	return &fetcher{p: p, leader: leader, sess: replicafetch.New[*replica](replicafetch.Config{
		ReplicaID:           p.n.id,
		MaxWait:             fetchMaxWait,
		MinBytes:            1,
		MaxBytes:            1 << 20,
		PartitionMaxBytes:   256 << 10,
		RefusalPause:        pauseAfterRefusal,
		MaxTruncationRounds: maxTruncationRounds,
	})}
}

func (f *fetcher) assign(rs []*replica) {
	parts := make([]replicafetch.Assignment[*replica], len(rs))
	for i, r := range rs {
		parts[i] = replicafetch.Assignment[*replica]{P: r, Topic: r.topic, Partition: r.index, Epoch: r.core.State().LeaderEpoch}
	}
	f.sess.Assign(parts)
	if !f.busy {
		f.busy = true
		f.p.n.after(0, f.round)
	}
}

// round runs one exchange with the leader and schedules the next.
func (f *fetcher) round() {
	if f.stopped || f.p.n.proc != f.p {
		return
	}
	c := f.p.n.c
	hold, holdWait := f.p.followerHold()
	step := f.sess.NextHolding(c.s.now, f.p.image.ClusterID(), hold, holdWait)
	for _, v := range step.Violations {
		c.violation("n%d fetcher of n%d: %s", f.p.n.id, f.leader, v)
	}
	if step.Request == nil {
		f.p.n.after(step.Wait, f.round)
		return
	}
	timeout := rpcTimeout
	if step.Request.Key() == 1 { // Fetch: a long poll
		timeout = fetchMaxWait + rpcTimeout
	}
	f.p.callTimeout(f.leader, step.Request, timeout, func(resp kmsg.Response, err error) {
		if f.stopped {
			return
		}
		rd := f.sess.Answer(c.s.now, resp, err)
		f.carryOut(rd)
		if rd.Backoff {
			f.p.n.after(fetchBackoff, f.round)
			return
		}
		f.p.n.after(0, f.round)
	})
}

func (f *fetcher) carryOut(rd replicafetch.Ready[*replica]) {
	c := f.p.n.c
	for _, v := range rd.Violations {
		c.violation("n%d fetcher of n%d: %s", f.p.n.id, f.leader, v)
	}
	for _, w := range rd.Warnings {
		f.p.n.tracef("%s", w)
	}
	for _, a := range rd.Actions {
		if err := replicafetch.Do(a); err != nil {
			f.p.n.tracef("%s: %s failed: %v", a.P.name(), a.Kind, err)
			f.sess.Failed(c.s.now, a)
		} else if a.Kind == replicafetch.Append && f.p.throttle.FollowerThrottled(f.p.image, a.P.id, a.P.index) {
			f.p.throttle.FollowerTook(len(a.Batches), c.nowMs())
			c.check.stats.ThrottledBytes += len(a.Batches)
		}
	}
}
