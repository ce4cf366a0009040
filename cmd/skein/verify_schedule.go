package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// faultKind is one kind of fault the nemesis inflicts on broker processes.
type faultKind string

const (
	faultKill    faultKind = "kill"    // kill -9, then start again after a while
	faultPause   faultKind = "pause"   // SIGSTOP, then SIGCONT after a while
	faultRestart faultKind = "restart" // rolling restart: SIGTERM and start, one broker after another
)

var allFaults = []faultKind{faultKill, faultPause, faultRestart}

// parseNemesis reads --nemesis: a comma-separated list of kill, pause and
// restart, or "all", or "none" (an empty list).
func parseNemesis(s string) ([]faultKind, error) {
	var kinds []faultKind
	for _, name := range splitList(s) {
		switch faultKind(name) {
		case faultKill, faultPause, faultRestart:
			if !slices.Contains(kinds, faultKind(name)) {
				kinds = append(kinds, faultKind(name))
			}
		case "all":
			for _, k := range allFaults {
				if !slices.Contains(kinds, k) {
					kinds = append(kinds, k)
				}
			}
		case "none":
		default:
			return nil, fmt.Errorf("--nemesis %q: want a comma-separated list of kill, pause, restart, or all or none", name)
		}
	}
	if strings.Contains(","+s+",", ",none,") && len(kinds) > 0 {
		return nil, fmt.Errorf("--nemesis %q: none cannot be combined with faults", s)
	}
	return kinds, nil
}

// faultStep is one entry of a nemesis schedule: stay quiet, then inflict
// the fault on a broker and hold it, then undo it.
type faultStep struct {
	quiet  time.Duration // before the fault
	kind   faultKind
	broker int           // 0-based; unused for a rolling restart (every broker in turn)
	hold   time.Duration // how long a killed broker stays down or a paused one stopped
}

func (s faultStep) String() string {
	switch s.kind {
	case faultRestart:
		return fmt.Sprintf("after %v quiet: rolling restart", s.quiet)
	case faultKill:
		return fmt.Sprintf("after %v quiet: kill -9 broker %d for %v", s.quiet, s.broker+1, s.hold)
	}
	return fmt.Sprintf("after %v quiet: %s broker %d for %v", s.quiet, s.kind, s.broker+1, s.hold)
}

// Schedule shape. Quiet periods let the cluster heal (ISR expansion, the
// client's metadata refresh) so the next fault meets a steady system as
// well as a shaken one; holds straddle the broker session timeout the
// local cluster uses (3 s), so some pauses are fenced and some are not.
const (
	minQuiet = 2 * time.Second
	maxQuiet = 8 * time.Second
	minHold  = time.Second
	maxHold  = 10 * time.Second
	// restartEstimate is what a rolling restart is expected to take per
	// broker, to keep it inside the fault window.
	restartEstimate = 5 * time.Second
	// finalQuiet is left at the end of the fault window before healing.
	finalQuiet = 3 * time.Second
	// maxFaultSteps bounds a schedule however long the run.
	maxFaultSteps = 10000
	maxDraws      = 4 * maxFaultSteps
)

// planFaults draws a schedule from seed: random faults among kinds on
// random brokers, with random quiet periods between them, fitting within
// window. The same arguments always give the same schedule.
func planFaults(seed int64, window time.Duration, kinds []faultKind, brokers int) []faultStep {
	if len(kinds) == 0 || brokers < 1 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x736b65696e)) // second word: "skein"
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)/int64(100*time.Millisecond)+1))*100*time.Millisecond
	}
	var plan []faultStep
	var at time.Duration
	// A drawn fault that does not fit in what is left of the window is
	// drawn again (a rolling restart is long); the schedule ends when not
	// even the shortest fault would fit, or after maxDraws attempts.
	for draws := 0; draws < maxDraws && len(plan) < maxFaultSteps && at+minQuiet+minHold <= window-finalQuiet; draws++ {
		s := faultStep{quiet: between(minQuiet, maxQuiet), kind: kinds[rng.IntN(len(kinds))], broker: rng.IntN(brokers)}
		length := time.Duration(brokers) * restartEstimate
		if s.kind != faultRestart {
			s.hold = between(minHold, maxHold)
			length = s.hold
		} else {
			s.broker = 0
		}
		if at+s.quiet+length > window-finalQuiet {
			continue
		}
		at += s.quiet + length
		plan = append(plan, s)
	}
	return plan
}
