package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// faultKind is one kind of fault the nemesis inflicts on the cluster.
type faultKind string

const (
	faultKill    faultKind = "kill"    // kill -9, then start again after a while
	faultPause   faultKind = "pause"   // SIGSTOP, then SIGCONT after a while
	faultRestart faultKind = "restart" // rolling restart: SIGTERM and start, one broker after another
	// Network partitions, through the fault proxies: the cut links either
	// blackhole (bytes stop, sockets stay open) or drop (connections
	// closed), as the schedule draws.
	faultIsolateLeader     faultKind = "partition-leader"     // a partition's leader cut off from the other nodes
	faultIsolateController faultKind = "partition-controller" // the active controller cut off from the other nodes
	faultIsolateMinority   faultKind = "partition-minority"   // a random minority of nodes cut off from the rest
	faultCutClients        faultKind = "partition-client"     // producers and consumers cut off from a partition's leader
	faultSlow              faultKind = "slow"                 // every link between nodes delayed
	// Disk faults.
	faultCorrupt  faultKind = "corrupt"   // a follower stopped, a byte of a segment flipped or its tail cut, started again
	faultDiskFull faultKind = "disk-full" // a broker's files may not grow (RLIMIT_FSIZE), as on a full disk
)

var allFaults = []faultKind{faultKill, faultPause, faultRestart,
	faultIsolateLeader, faultIsolateController, faultIsolateMinority, faultCutClients, faultSlow,
	faultCorrupt, faultDiskFull}

// faultGroups are names for several kinds at once.
var faultGroups = map[string][]faultKind{
	"all":       allFaults,
	"process":   {faultKill, faultPause, faultRestart},
	"partition": {faultIsolateLeader, faultIsolateController, faultIsolateMinority, faultCutClients},
	"network":   {faultIsolateLeader, faultIsolateController, faultIsolateMinority, faultCutClients, faultSlow},
	"disk":      {faultCorrupt, faultDiskFull},
}

// parseNemesis reads --nemesis: a comma-separated list of fault kinds and
// groups (all, process, partition, network, disk), or "none" (an empty
// list).
func parseNemesis(s string) ([]faultKind, error) {
	var kinds []faultKind
	add := func(k faultKind) {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, name := range splitList(s) {
		if group, ok := faultGroups[name]; ok {
			for _, k := range group {
				add(k)
			}
			continue
		}
		switch {
		case slices.Contains(allFaults, faultKind(name)):
			add(faultKind(name))
		case name == "none":
		default:
			var names []string
			for _, k := range allFaults {
				names = append(names, string(k))
			}
			return nil, fmt.Errorf("--nemesis %q: want a comma-separated list of %s, or all, process, partition, network, disk or none", name, strings.Join(names, ", "))
		}
	}
	if strings.Contains(","+s+",", ",none,") && len(kinds) > 0 {
		return nil, fmt.Errorf("--nemesis %q: none cannot be combined with faults", s)
	}
	return kinds, nil
}

// faultStep is one entry of a nemesis schedule: stay quiet, then inflict
// the fault and hold it, then undo it. Whom a partition hits (the leader,
// the controller) is looked up when it starts; the draws here only make
// the choice repeatable.
type faultStep struct {
	quiet     time.Duration // before the fault
	kind      faultKind
	broker    int           // 0-based: the broker hit (kill, pause, minority, corrupt, disk-full)
	partition int32         // whose leader (partition-leader, partition-client)
	drop      bool          // partitions: close connections rather than blackhole them
	delay     time.Duration // slow: added to every chunk on the links between nodes
	truncate  bool          // corrupt: cut the segment's tail rather than flip a byte
	hold      time.Duration // how long the fault lasts
}

func (s faultStep) String() string {
	mode := "blackhole"
	if s.drop {
		mode = "drop"
	}
	switch s.kind {
	case faultRestart:
		return fmt.Sprintf("after %v quiet: rolling restart", s.quiet)
	case faultKill:
		return fmt.Sprintf("after %v quiet: kill -9 broker %d for %v", s.quiet, s.broker+1, s.hold)
	case faultIsolateLeader:
		return fmt.Sprintf("after %v quiet: isolate the leader of partition %d (%s) for %v", s.quiet, s.partition, mode, s.hold)
	case faultIsolateController:
		return fmt.Sprintf("after %v quiet: isolate the active controller (%s) for %v", s.quiet, mode, s.hold)
	case faultIsolateMinority:
		return fmt.Sprintf("after %v quiet: isolate a minority around broker %d (%s) for %v", s.quiet, s.broker+1, mode, s.hold)
	case faultCutClients:
		return fmt.Sprintf("after %v quiet: cut clients from the leader of partition %d (%s) for %v", s.quiet, s.partition, mode, s.hold)
	case faultSlow:
		return fmt.Sprintf("after %v quiet: delay links between brokers by %v for %v", s.quiet, s.delay, s.hold)
	case faultCorrupt:
		how := "flip a byte in"
		if s.truncate {
			how = "cut the tail of"
		}
		return fmt.Sprintf("after %v quiet: %s a segment of a follower near broker %d", s.quiet, how, s.broker+1)
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
	// corruptEstimate is what stopping a broker, corrupting a segment and
	// starting it again is expected to take.
	corruptEstimate = 5 * time.Second
	// minDelay and maxDelay bound the slow fault's added latency.
	minDelay = 100 * time.Millisecond
	maxDelay = time.Second
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
		s := faultStep{quiet: between(minQuiet, maxQuiet), kind: kinds[rng.IntN(len(kinds))], broker: rng.IntN(brokers),
			partition: int32(rng.IntN(maxPartitions)), drop: rng.IntN(2) == 0, truncate: rng.IntN(2) == 0}
		length := time.Duration(brokers) * restartEstimate
		switch s.kind {
		case faultRestart:
			s.broker = 0
		case faultCorrupt:
			length = corruptEstimate
		default:
			s.hold = between(minHold, maxHold)
			length = s.hold
		}
		if s.kind == faultSlow {
			s.delay = between(minDelay, maxDelay)
		}
		if at+s.quiet+length > window-finalQuiet {
			continue
		}
		at += s.quiet + length
		plan = append(plan, s)
	}
	return plan
}
