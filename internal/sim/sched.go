package sim

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// scheduler is the simulation's only clock and its only source of
// randomness. Events run in order of simulated time, ties in order of
// scheduling, so a run depends on nothing but the seed.
type scheduler struct {
	now   time.Duration // since the start of the run
	seq   uint64
	queue eventQueue
	rng   *rand.Rand
	steps int64
	// instantSteps counts the events run at the current simulated
	// instant; more than maxStepsPerInstant is a livelock (events that
	// schedule each other with no delay, so time never moves on), which
	// stuck reports instead of running the seed forever.
	instantSteps int
	stuck        func(steps int)
}

// maxStepsPerInstant bounds the events at one simulated instant. A
// burst of a few thousand is normal (every node's timers, a whole
// fetch round); hundreds of thousands is a loop.
const maxStepsPerInstant = 200_000

type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func newScheduler(seed uint64) *scheduler {
	return &scheduler{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// after runs fn d from now (d < 0 counts as 0).
func (s *scheduler) after(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.queue, &event{at: s.now + max(d, 0), seq: s.seq, fn: fn})
}

// runUntil runs events up to and including simulated time end, stopping
// early when stop returns true after an event, or after stuck was called
// for a livelock.
func (s *scheduler) runUntil(end time.Duration, stop func() bool) {
	for s.queue.Len() > 0 && s.queue[0].at <= end {
		e := heap.Pop(&s.queue).(*event)
		if e.at != s.now {
			s.instantSteps = 0
		}
		s.now = e.at
		s.steps++
		s.instantSteps++
		e.fn()
		if s.instantSteps > maxStepsPerInstant && s.stuck != nil {
			s.stuck(s.instantSteps)
			return
		}
		if stop() {
			return
		}
	}
	s.now = max(s.now, end)
}

// between draws a duration uniformly in [lo, hi].
func (s *scheduler) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// chance is true with probability p.
func (s *scheduler) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }
