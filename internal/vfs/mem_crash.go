package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashOptions shape a simulated power loss.
type CrashOptions struct {
	// TornWrites keeps, for every surviving file whose current contents are
	// longer than its durable contents, a random-length prefix (possibly
	// empty, possibly all) of those unsynced trailing bytes: the last writes
	// reached the disk in part. Overwrites inside the durable length and
	// unsynced truncations are still lost entirely.
	TornWrites bool
	// Rand draws the torn lengths. If nil, a generator seeded with Seed is
	// used. Files are visited in sorted path order, so the outcome depends
	// only on the generator and the filesystem's history.
	Rand *rand.Rand
	// Seed seeds the generator when Rand is nil.
	Seed uint64
}

// Crash simulates power loss followed by a reboot: the tree is rebuilt from
// durable directory entries (see Mem for the model), every surviving file is
// reset to its durable contents, and every open handle becomes invalid
// (its methods return errors wrapping ErrCrashed). Faults and capacity are
// kept.
func (m *Mem) Crash(opts CrashOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rng *rand.Rand
	if opts.TornWrites {
		rng = opts.Rand
		if rng == nil {
			rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed))
		}
	}
	m.generation++
	survivors := map[*memNode]bool{}
	var files []*memNode
	m.restoreDir(m.root, survivors, &files, rng)
	m.used = 0
	for _, f := range files {
		f.charged = 0
		m.recharge(f)
	}
}

// restoreDir makes dir's durable entries current again and recurses in
// sorted name order, so torn lengths are drawn in a stable order. seen
// holds the nodes already restored: a file reached twice is one file with
// two names; a directory reached twice (possible only through half-synced
// renames) keeps its first name and loses the second.
func (m *Mem) restoreDir(dir *memNode, seen map[*memNode]bool, files *[]*memNode, rng *rand.Rand) {
	seen[dir] = true
	dir.entries = maps.Clone(dir.durableEntries)
	for _, name := range slices.Sorted(maps.Keys(dir.entries)) {
		child := dir.entries[name]
		switch {
		case child.isDir:
			if seen[child] {
				delete(dir.entries, name)
				delete(dir.durableEntries, name)
				continue
			}
			m.restoreDir(child, seen, files, rng)
		case seen[child]:
			child.nlink++
		default:
			seen[child] = true
			*files = append(*files, child)
			child.restoreFile(rng)
		}
	}
}

// restoreFile resets a file to what the disk holds after the crash.
func (n *memNode) restoreFile(rng *rand.Rand) {
	if rng != nil && len(n.data) > len(n.durable) {
		unsynced := n.data[len(n.durable):]
		n.durable = append(n.durable, unsynced[:rng.IntN(len(unsynced)+1)]...)
	}
	n.data = slices.Clone(n.durable) // never share: Sync appends into durable
	n.dirtyFrom = len(n.data)
	n.nlink = 1
	n.opens = 0
}
