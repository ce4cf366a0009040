package group

import "container/heap"

// timerHeap orders groups by their next deadline. Entries are not removed
// when a deadline moves; an entry is stale when it no longer matches the
// group's timerAt and is skipped. Rebuilding when stale entries dominate
// keeps the heap within a small multiple of the number of groups.
type timerHeap struct {
	entries []timerEntry
}

type timerEntry struct {
	at    int64
	group string
}

type timerSlice []timerEntry

func (s timerSlice) Len() int           { return len(s) }
func (s timerSlice) Less(i, j int) bool { return s[i].at < s[j].at }
func (s timerSlice) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
func (s *timerSlice) Push(x any)        { *s = append(*s, x.(timerEntry)) }
func (s *timerSlice) Pop() any {
	old := *s
	e := old[len(old)-1]
	*s = old[:len(old)-1]
	return e
}

func (h *timerHeap) slice() *timerSlice { return (*timerSlice)(&h.entries) }

// schedule records g's current next deadline.
func (h *timerHeap) schedule(g *Group) {
	at := g.nextDeadline()
	if at == g.timerAt {
		return
	}
	g.timerAt = at
	if at != noDeadline {
		heap.Push(h.slice(), timerEntry{at: at, group: g.id})
	}
}

func live(e timerEntry, groups map[string]*Group) *Group {
	if g := groups[e.group]; g != nil && g.timerAt == e.at {
		return g
	}
	return nil
}

// dropStale pops stale entries off the top and rebuilds the heap when
// stale entries make up most of it.
func (h *timerHeap) dropStale(groups map[string]*Group) {
	for len(h.entries) > 0 && live(h.entries[0], groups) == nil {
		heap.Pop(h.slice())
	}
	if len(h.entries) > 2*len(groups)+64 {
		kept := h.entries[:0]
		for _, e := range h.entries {
			if live(e, groups) != nil {
				kept = append(kept, e)
			}
		}
		h.entries = kept
		heap.Init(h.slice())
	}
}

// popDue returns the groups whose deadline is at or before now, in
// deadline order; their timers are disarmed until schedule runs again.
func (h *timerHeap) popDue(now int64, groups map[string]*Group) []*Group {
	var due []*Group
	for {
		h.dropStale(groups)
		if len(h.entries) == 0 || h.entries[0].at > now {
			return due
		}
		e := heap.Pop(h.slice()).(timerEntry)
		g := groups[e.group]
		g.timerAt = noDeadline
		due = append(due, g)
	}
}

func (h *timerHeap) next(groups map[string]*Group) (int64, bool) {
	h.dropStale(groups)
	if len(h.entries) == 0 {
		return 0, false
	}
	return h.entries[0].at, true
}
