// Package writeorder applies the outcomes of a coordinator's writes in the
// order the writes were handed out, whatever order the outcomes are
// reported in: a partition commits them in log order, and answers that
// depend on a later write also depend on the earlier ones. The group and
// transaction coordinator hosts share it.
package writeorder

// Queue holds the writes whose outcome is not applied yet. The zero
// value is ready to use.
type Queue[W any] struct {
	pending  []entry[W]
	outcomes map[uint64]error
}

type entry[W any] struct {
	id uint64
	w  W
}

// Add appends the write id (ids are handed out in increasing order).
func (q *Queue[W]) Add(id uint64, w W) {
	q.pending = append(q.pending, entry[W]{id, w})
}

// Report records the outcome of write id and calls apply for every write
// whose outcome, and every earlier one's, is now known, in order.
func (q *Queue[W]) Report(id uint64, err error, apply func(w W, err error)) {
	if q.outcomes == nil {
		q.outcomes = map[uint64]error{}
	}
	q.outcomes[id] = err
	for len(q.pending) > 0 {
		e := q.pending[0]
		werr, ok := q.outcomes[e.id]
		if !ok {
			return
		}
		delete(q.outcomes, e.id)
		q.pending = q.pending[1:]
		apply(e.w, werr)
	}
}
