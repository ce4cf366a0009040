package api

import "sync"

// countdown answers a request whose parts complete through callbacks,
// possibly on other goroutines: each part dispatched is add()ed, each
// answered part calls finish(), and the handler holds one count of its
// own while it dispatches, released by its own finish(). The last finish
// runs done. A part's callback writes its own slot of the answer before
// finish, so done (after the last finish) sees every slot.
type countdown struct {
	mu      sync.Mutex
	pending int
	done    func()
}

func newCountdown(done func()) *countdown { return &countdown{pending: 1, done: done} }

func (c *countdown) add() {
	c.mu.Lock()
	c.pending++
	c.mu.Unlock()
}

func (c *countdown) finish() {
	c.mu.Lock()
	c.pending--
	last := c.pending == 0
	c.mu.Unlock()
	if last {
		c.done()
	}
}
