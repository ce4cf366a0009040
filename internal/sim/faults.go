package sim

import (
	"time"

	"github.com/skein-log/skein/internal/vfs"
)

// faultState injects the run's fault mix until the faulty phase ends.
type faultState struct {
	c *Cluster
	// powerLost is set once any machine lost power: with write.caching
	// that may lose acknowledged records, and the checker knows it.
	powerLost bool
}

func newFaultState(c *Cluster) *faultState { return &faultState{c: c} }

func (f *faultState) start() {
	if f.c.opts.Faults.Every > 0 {
		f.c.s.after(f.c.s.between(time.Second, 3*time.Second), f.next)
	}
}

type faultKind int

const (
	faultKill faultKind = iota
	faultPowerLoss
	faultPowerLossAll
	faultPartition
	faultOneWay
	faultPause
	faultDiskFull
)

func (f *faultState) enabled() []faultKind {
	m := f.c.opts.Faults
	var out []faultKind
	for _, k := range []struct {
		on   bool
		kind faultKind
	}{{m.Kill, faultKill}, {m.PowerLoss, faultPowerLoss}, {m.PowerLossAll, faultPowerLossAll},
		{m.Partition, faultPartition}, {m.OneWay, faultOneWay}, {m.Pause, faultPause}, {m.DiskFull, faultDiskFull}} {
		if k.on {
			out = append(out, k.kind)
		}
	}
	return out
}

func (f *faultState) next() {
	c := f.c
	if c.healed || c.stopped {
		return
	}
	every := c.opts.Faults.Every
	c.s.after(c.s.between(every/2, every*3/2), f.next)
	kinds := f.enabled()
	if len(kinds) == 0 {
		return
	}
	n := c.nodes[c.ids[c.s.rng.IntN(len(c.ids))]]
	st := &c.check.stats
	switch kinds[c.s.rng.IntN(len(kinds))] {
	case faultKill:
		if !n.up {
			return
		}
		st.Crashes++
		n.tracef("FAULT kill -9")
		n.up, n.proc = false, nil
		f.restartLater(n)
	case faultPowerLoss:
		if !n.up {
			return
		}
		st.Crashes++
		n.tracef("FAULT power loss")
		f.powerLost = true
		n.crash(c.s.chance(0.5))
		f.restartLater(n)
	case faultPowerLossAll:
		st.PowerLosses++
		f.powerLost = true
		c.tracef("FAULT power loss of every machine")
		for _, id := range c.ids {
			m := c.nodes[id]
			if m.up {
				m.crash(c.s.chance(0.5))
			} else {
				m.fs.Crash(vfs.CrashOptions{TornWrites: true, Seed: c.s.rng.Uint64()})
			}
			f.restartLater(m)
		}
	case faultPartition:
		st.Partitions++
		n.tracef("FAULT isolated from every other node")
		for _, id := range c.ids {
			if id != n.id {
				c.net.cut(n.id, id)
				c.net.cut(id, n.id)
			}
		}
		c.s.after(c.s.between(500*time.Millisecond, 5*time.Second), func() {
			n.tracef("partition heals")
			for _, id := range c.ids {
				c.net.heal(n.id, id)
				c.net.heal(id, n.id)
			}
		})
	case faultOneWay:
		st.Partitions++
		others := make([]int32, 0, len(c.ids)-1)
		for _, id := range c.ids {
			if id != n.id {
				others = append(others, id)
			}
		}
		to := others[c.s.rng.IntN(len(others))]
		c.tracef("FAULT one-way cut n%d -> n%d", n.id, to)
		c.net.cut(n.id, to)
		c.s.after(c.s.between(500*time.Millisecond, 5*time.Second), func() {
			c.tracef("one-way cut n%d -> n%d heals", n.id, to)
			c.net.heal(n.id, to)
		})
	case faultPause:
		if !n.up || n.pausedUntil > c.s.now {
			return
		}
		st.Pauses++
		d := c.s.between(200*time.Millisecond, 2*sessionTimeout)
		n.tracef("FAULT paused for %v", d)
		n.pausedUntil = c.s.now + d
	case faultDiskFull:
		st.DiskFull++
		n.tracef("FAULT disk full")
		n.fs.SetCapacity(n.fs.Usage() + c.s.rng.Int64N(4096))
		c.s.after(c.s.between(500*time.Millisecond, 4*time.Second), func() {
			n.tracef("disk space freed")
			n.fs.SetCapacity(-1)
		})
	}
}

func (f *faultState) restartLater(n *node) {
	c := f.c
	inc := n.incarnation
	c.s.after(c.s.between(100*time.Millisecond, 4*time.Second), func() {
		if !n.up && n.incarnation == inc && !c.healed {
			c.restart(n)
		}
	})
}
