package ctrlcore

import (
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// session is the controller's view of one broker's liveness.
type session struct {
	// seen is when the session was last renewed; zero once the broker is
	// known dead (its heartbeat connection closed, its port refused).
	seen time.Time
	// conn is the connection it last heartbeated (or registered) on, nil
	// if none is known: a broker that has not spoken to this controller
	// yet, or a runtime without connections (the simulator).
	conn api.ConnID
}

func (s *session) expired(now time.Time, timeout time.Duration) bool {
	return s.seen.IsZero() || now.Sub(s.seen) > timeout
}

func (c *Core) renew(id int32, conn api.ConnID) {
	s := c.sessions[id]
	if s == nil {
		s = &session{}
		c.sessions[id] = s
	}
	s.seen = c.now
	if conn != nil {
		s.conn = conn
	}
}

// ConnClosed reports that a controller-listener connection closed. Every
// broker whose session it carried counts as dead at once (a dead process
// closes its sockets long before its session times out); the next Tick
// fences them. It reports whether any session was on conn.
func (c *Core) ConnClosed(conn api.ConnID) bool {
	found := false
	for id, s := range c.sessions {
		if conn != nil && s.conn == conn && id != c.cfg.Self {
			s.seen, s.conn = time.Time{}, nil
			found = true
		}
	}
	return found
}

// Unseen lists the unfenced brokers of im (other than Self) that have no
// session connection to this controller: the runtime may probe whether a
// process still listens at their address.
func (c *Core) Unseen(im *metadata.Image) []int32 {
	if !c.active {
		return nil
	}
	var out []int32
	for _, br := range im.Brokers() {
		if br.Fenced || br.ID == c.cfg.Self {
			continue
		}
		if s := c.sessions[br.ID]; s == nil || s.conn == nil {
			out = append(out, br.ID)
		}
	}
	return out
}

// Unreachable reports that nothing listens at a broker's address (its
// port refused a connection): it is dead and need not be waited for.
func (c *Core) Unreachable(id int32) {
	if !c.active {
		return
	}
	if s := c.sessions[id]; s != nil {
		s.seen = time.Time{}
	} else {
		c.sessions[id] = &session{}
	}
}

// Tick queues one maintenance pass unless one is queued already: fence
// the brokers whose sessions expired (or are known dead), elect leaders
// where there are none, and, every RebalanceInterval, move leaderships
// back to preferred replicas, and every BalanceInterval run the automatic
// balancer (balance.go). The pass judges sessions at its turn, with
// the time of the event that runs it, against the image of that turn.
func (c *Core) Tick(now time.Time, im *metadata.Image) Ready {
	c.begin(now)
	c.startGather(im)
	if c.active && !c.maintenanceQueued {
		c.maintenanceQueued = true
		var fenced []int32
		c.enqueue(im, decision{what: "session expiry and elections",
			decide: func(im *metadata.Image) ([]metadata.Record, error) {
				c.maintenanceQueued = false
				var recs []metadata.Record
				fenced, recs = c.maintenance(im)
				return recs, nil
			},
			settle: func(_ *metadata.Image, err error) func() {
				switch {
				case err != nil:
					c.note("controller maintenance failed", "err", err)
				case len(fenced) > 0:
					c.note("fenced brokers whose sessions expired", "brokers", fenced)
					c.rd.Fenced += len(fenced)
				}
				return nil
			}})
	}
	return c.end()
}

func (c *Core) maintenance(im *metadata.Image) (fenced []int32, recs []metadata.Record) {
	next := im
	for _, br := range im.Brokers() {
		if br.Fenced || br.ID == c.cfg.Self {
			continue
		}
		s := c.sessions[br.ID]
		if s == nil {
			// First sight (registered under an earlier controller while
			// this one was catching up): its session starts now.
			c.sessions[br.ID] = &session{seen: c.now}
			continue
		}
		if !s.expired(c.now, c.cfg.SessionTimeout) {
			continue
		}
		fence, err := controller.FenceBroker(next, br.ID)
		if err != nil {
			c.note("fencing broker failed", "broker", br.ID, "err", err)
			continue
		}
		n, err := next.Apply(fence...)
		if err != nil {
			c.note("fencing broker failed", "broker", br.ID, "err", err)
			continue
		}
		next, recs, fenced = n, append(recs, fence...), append(fenced, br.ID)
	}
	// Partitions left without a leader (a controller change in the middle
	// of an election, an unclean topic whose replica came back) get one.
	next, recs = chain(next, recs, controller.ElectLeaderless(next, c.unclean))
	if c.cfg.RebalanceInterval > 0 && c.now.Sub(c.lastRebalance) >= c.cfg.RebalanceInterval {
		c.lastRebalance = c.now
		next, recs = chain(next, recs, controller.PreferredLeaderElection(next))
	}
	_, recs = c.balance(next, recs)
	return fenced, recs
}

// chain appends more, decided against im, to recs and returns the image
// with them applied (im itself if they do not apply: the queue's check
// then refuses the whole entry).
func chain(im *metadata.Image, recs, more []metadata.Record) (*metadata.Image, []metadata.Record) {
	if len(more) == 0 {
		return im, recs
	}
	next, err := im.Apply(more...)
	if err != nil {
		return im, append(recs, more...)
	}
	return next, append(recs, more...)
}
