package sim

import (
	"testing"
	"time"
)

// TestSchedulerReportsALivelock: events that schedule each other with no
// delay never let simulated time move on; the scheduler stops and says so
// instead of running forever, and leaves a busy but progressing instant
// alone.
func TestSchedulerReportsALivelock(t *testing.T) {
	s := newScheduler(1)
	var stuckAt, stuckSteps int
	s.stuck = func(steps int) { stuckAt, stuckSteps = int(s.now), steps }
	var loop func()
	loop = func() { s.after(0, loop) }
	s.after(time.Millisecond, loop)
	s.runUntil(time.Second, func() bool { return false })
	if stuckSteps <= maxStepsPerInstant || stuckAt != int(time.Millisecond) {
		t.Fatalf("stuck after %d steps at %v, want > %d at 1ms", stuckSteps, time.Duration(stuckAt), maxStepsPerInstant)
	}

	s = newScheduler(1)
	s.stuck = func(steps int) { t.Fatalf("a run whose time moves on reported a livelock after %d steps", steps) }
	var ticks int
	var tick func()
	tick = func() {
		ticks++
		for range 1000 { // a burst at each instant, then time moves on
			s.after(0, func() {})
		}
		s.after(time.Microsecond, tick)
	}
	s.after(0, tick)
	s.runUntil(time.Second, func() bool { return ticks == 1000 })
	if ticks != 1000 {
		t.Fatalf("ran %d ticks, want 1000", ticks)
	}
}
