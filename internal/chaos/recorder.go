package chaos

import (
	"sync"
	"time"

	"github.com/skein-log/skein/internal/verify"
)

// recorder collects the history of a verify run from every producer,
// consumer and the nemesis, stamping each event with the time since the
// run began. It holds at most max events: past that it counts what it
// drops, and the run reports the history as incomplete rather than judge
// from part of it.
type recorder struct {
	mu      sync.Mutex
	start   time.Time
	events  []verify.Event
	max     int
	dropped int
}

func newRecorder(start time.Time, maxEvents int) *recorder {
	return &recorder{start: start, max: maxEvents}
}

// add stamps e with the current time of the run and appends it.
func (r *recorder) add(e verify.Event) {
	r.addAt(time.Now(), e)
}

// addAt appends e as having happened at now.
func (r *recorder) addAt(now time.Time, e verify.Event) {
	e.At = now.Sub(r.start)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) >= r.max {
		r.dropped++
		return
	}
	r.events = append(r.events, e)
}

// snapshot returns the events so far and how many were dropped.
func (r *recorder) snapshot() ([]verify.Event, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]verify.Event(nil), r.events...), r.dropped
}
