package node

import "sync"

// groupWrite is one batch of coordinator records on its way to being
// committed. Answers that depend on it wait for it: those of the call that
// made the records, and those of later calls that wrote nothing (their
// answers may reveal the state the records hold, e.g. an offset fetched
// right after its commit). Writes of one partition commit in log order, so
// waiting for the latest covers every earlier one.
//
// Its own lock, not the coordinator's: the append's completion may run
// while the coordinator's lock is held (inside the append) or on another
// goroutine.
type groupWrite struct {
	mu       sync.Mutex
	finished bool
	err      error
	waiters  []func(error)
}

// then runs f with the write's outcome once it is known: now if it already
// is, else at finish, after the waiters registered before it.
func (w *groupWrite) then(f func(error)) {
	w.mu.Lock()
	if !w.finished {
		w.waiters = append(w.waiters, f)
		w.mu.Unlock()
		return
	}
	err := w.err
	w.mu.Unlock()
	f(err)
}

// finish records the outcome and runs the waiters in order. Only the first
// call counts.
func (w *groupWrite) finish(err error) {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return
	}
	w.finished, w.err = true, err
	waiters := w.waiters
	w.waiters = nil
	w.mu.Unlock()
	for _, f := range waiters {
		f(err)
	}
}
