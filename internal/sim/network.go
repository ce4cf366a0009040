package sim

import (
	"time"
)

// netConfig is how lossy the simulated network is. Zero values make a
// perfect network with the base latency.
type netConfig struct {
	MinDelay, MaxDelay time.Duration // each message's latency, uniform
	DropRate           float64       // a message vanishes
	DupRate            float64       // a message arrives twice
	// SlowRate sends a message with up to SlowDelay extra latency, which
	// reorders it behind later ones.
	SlowRate  float64
	SlowDelay time.Duration
}

// network carries messages between endpoints (node ids; clients have ids
// of their own). A cut link drops what is sent over it; cuts are
// directional, so a one-way partition is one cut.
type network struct {
	s    *scheduler
	cfg  netConfig
	cuts map[[2]int32]bool // from, to
	// sent and dropped count messages, for the run's summary.
	sent, dropped int64
}

func newNetwork(s *scheduler, cfg netConfig) *network {
	return &network{s: s, cfg: cfg, cuts: map[[2]int32]bool{}}
}

func (n *network) cut(from, to int32)        { n.cuts[[2]int32{from, to}] = true }
func (n *network) heal(from, to int32)       { delete(n.cuts, [2]int32{from, to}) }
func (n *network) healAll()                  { clear(n.cuts) }
func (n *network) isCut(from, to int32) bool { return n.cuts[[2]int32{from, to}] }

// send delivers deliver at the far end after a random delay, unless the
// link is cut (when sent or when it would arrive) or the message is lost.
func (n *network) send(from, to int32, deliver func()) {
	n.sent++
	if n.isCut(from, to) || n.s.chance(n.cfg.DropRate) {
		n.dropped++
		return
	}
	copies := 1
	if n.s.chance(n.cfg.DupRate) {
		copies = 2
	}
	for range copies {
		d := n.s.between(n.cfg.MinDelay, n.cfg.MaxDelay)
		if n.s.chance(n.cfg.SlowRate) {
			d += n.s.between(0, n.cfg.SlowDelay)
		}
		n.s.after(d, func() {
			if n.isCut(from, to) {
				n.dropped++
				return
			}
			deliver()
		})
	}
}
