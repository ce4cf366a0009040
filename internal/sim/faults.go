package sim

import (
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/skein-log/skein/internal/batch"
	"github.com/skein-log/skein/internal/vfs"
)

// faultState injects the run's fault mix until the faulty phase ends.
type faultState struct {
	c *Cluster
	// powerLost is set once any machine lost power: with write.caching
	// that may lose acknowledged records, and the checker knows it.
	powerLost bool
	// corrupted is set once a stored byte was flipped.
	corrupted bool
}

func newFaultState(c *Cluster) *faultState { return &faultState{c: c} }

func (f *faultState) start() {
	if f.c.opts.Faults.Every > 0 {
		f.c.s.after(f.c.s.between(time.Second, 3*time.Second), f.next)
	}
	if f.c.opts.Faults.Reassign {
		f.c.s.after(f.c.s.between(time.Second, 3*time.Second), f.nextReassign)
	}
	if f.c.opts.Faults.LogDirMoves && f.c.opts.LogDirs > 1 {
		f.c.s.after(f.c.s.between(500*time.Millisecond, 2*time.Second), f.nextLogDirMove)
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
	faultBitFlip
	faultStop
)

func (f *faultState) enabled() []faultKind {
	m := f.c.opts.Faults
	var out []faultKind
	for _, k := range []struct {
		on   bool
		kind faultKind
	}{{m.Kill, faultKill}, {m.PowerLoss, faultPowerLoss}, {m.PowerLossAll, faultPowerLossAll},
		{m.Partition, faultPartition}, {m.OneWay, faultOneWay}, {m.Pause, faultPause}, {m.DiskFull, faultDiskFull}, {m.BitFlip, faultBitFlip},
		{m.Stop, faultStop}} {
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
		n.exit()
		f.restartLater(n)
	case faultStop:
		if !n.up || n.proc.stopping != nil {
			return
		}
		st.Stops++
		n.tracef("FAULT clean stop")
		n.stop(func() { f.restartLater(n) })
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
				m.boot++
				m.poweredOff = true
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
	case faultBitFlip:
		f.flipBit(n)
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

// closedCleanly reports whether the log in dir was closed cleanly (its
// node stopped it when the image no longer listed it there, and has not yet
// deleted it): reopening such a log trusts its batches rather than
// rechecking them, so rot there is the unsimulated kind (see flipBit).
func closedCleanly(fs *vfs.Mem, dir string) bool {
	_, err := fs.Stat(path.Join(dir, ".clean_shutdown"))
	return err == nil
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

// flipBit corrupts one stored byte of a partition's log segment on n, in
// both its cached and durable contents (bit rot), and tells the checker
// which node's copy of which partition can no longer be trusted.
func (f *faultState) flipBit(n *node) {
	c := f.c
	dirs, err := n.fs.ReadDir("data")
	if err != nil {
		return
	}
	var files []vfs.DirEntry
	var paths []string
	for _, d := range dirs {
		if !d.IsDir || !strings.HasPrefix(d.Name, topicName+"-") || closedCleanly(n.fs, path.Join("data", d.Name)) {
			continue
		}
		dir := path.Join("data", d.Name)
		segs, err := n.fs.ReadDir(dir)
		if err != nil {
			continue
		}
		recoveryPoint := readRecoveryPoint(n.fs, dir)
		var logs []vfs.DirEntry
		for _, e := range segs {
			if strings.HasSuffix(e.Name, ".log") {
				logs = append(logs, e)
			}
		}
		for i, e := range logs {
			if e.Size == 0 {
				continue
			}
			// Recovery re-checks the last segment and those at or past
			// the recovery point; older sealed segments are trusted, and
			// rot there is not simulated (see the package documentation).
			base, err := strconv.ParseInt(strings.TrimSuffix(e.Name, ".log"), 10, 64)
			if err != nil || (base < recoveryPoint && i != len(logs)-1) {
				continue
			}
			files = append(files, e)
			paths = append(paths, path.Join(dir, e.Name))
		}
	}
	if len(files) == 0 {
		return
	}
	i := c.s.rng.IntN(len(files))
	off, ok := pickCheckedByte(n.fs, paths[i], c.s.rng.Float64())
	if !ok {
		return
	}
	if err := n.fs.Corrupt(paths[i], off, byte(1)<<c.s.rng.IntN(8)); err != nil {
		return
	}
	c.check.stats.BitFlips++
	n.tracef("FAULT bit flip in %s at byte %d; the process crashes", paths[i], off)
	f.corrupted = true
	// The rot is found by recovery, which checks every batch of the last
	// segment after an unclean stop. Rot that a running leader reads is
	// not survivable today (see the package documentation).
	n.exit()
	f.restartLater(n)
}

// pickCheckedByte picks a byte of a stored batch that recovery's checks
// cover: from the magic byte on (magic, CRC and the CRC-covered body).
// The first 16 bytes of a batch header (base offset, length, leader epoch)
// are outside the CRC in Kafka's format; rot there is not simulated (see
// the package documentation). at in [0, 1) chooses the batch.
func pickCheckedByte(fs *vfs.Mem, name string, at float64) (int64, bool) {
	data, err := vfs.ReadFile(fs, name)
	if err != nil {
		return 0, false
	}
	var starts, sizes []int
	for pos := 0; pos+batch.HeaderSize <= len(data); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil || h.Size() <= batch.HeaderSize || pos+h.Size() > len(data) {
			break
		}
		starts, sizes = append(starts, pos), append(sizes, h.Size())
		pos += h.Size()
	}
	if len(starts) == 0 {
		return 0, false
	}
	i := min(int(at*float64(len(starts))), len(starts)-1)
	const firstChecked = 16 // the magic byte
	span := sizes[i] - firstChecked
	return int64(starts[i] + firstChecked + int(at*1e6)%span), true
}

// readRecoveryPoint reads storage's recovery-point checkpoint ("version\n
// offset\n"); 0 when there is none.
func readRecoveryPoint(fs *vfs.Mem, dir string) int64 {
	data, err := vfs.ReadFile(fs, path.Join(dir, "recovery-point"))
	if err != nil {
		return 0
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		return 0
	}
	v, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return 0
	}
	return v
}
