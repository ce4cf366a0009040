package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind is one kind of fault the nemesis inflicts on the cluster.
type FaultKind string

const (
	FaultKill    FaultKind = "kill"    // kill -9, then start again after a while
	FaultPause   FaultKind = "pause"   // SIGSTOP, then SIGCONT after a while
	FaultRestart FaultKind = "restart" // rolling restart: SIGTERM and start, one broker after another
	// Network partitions, through the fault proxies: the cut links either
	// blackhole (bytes stop, sockets stay open) or drop (connections
	// closed), as the schedule draws.
	FaultIsolateLeader     FaultKind = "partition-leader"     // a partition's leader cut off from the other nodes
	FaultIsolateController FaultKind = "partition-controller" // the active controller cut off from the other nodes
	FaultIsolateMinority   FaultKind = "partition-minority"   // a random minority of nodes cut off from the rest
	FaultCutClients        FaultKind = "partition-client"     // producers and consumers cut off from a partition's leader
	FaultSlow              FaultKind = "slow"                 // every link between nodes delayed
	// Disk faults.
	FaultCorrupt  FaultKind = "corrupt"   // a follower stopped, a byte of a segment flipped or its tail cut, started again
	FaultDiskFull FaultKind = "disk-full" // a broker's files may not grow (RLIMIT_FSIZE), as on a full disk
	// Membership changes.
	FaultReassign FaultKind = "reassign" // a partition's replicas moved (its leader's among them) with AlterPartitionReassignments
)

var AllFaults = []FaultKind{FaultKill, FaultPause, FaultRestart,
	FaultIsolateLeader, FaultIsolateController, FaultIsolateMinority, FaultCutClients, FaultSlow,
	FaultCorrupt, FaultDiskFull, FaultReassign}

// FaultGroups are names for several kinds at once.
var FaultGroups = map[string][]FaultKind{
	"all":       AllFaults,
	"process":   {FaultKill, FaultPause, FaultRestart},
	"partition": {FaultIsolateLeader, FaultIsolateController, FaultIsolateMinority, FaultCutClients},
	"network":   {FaultIsolateLeader, FaultIsolateController, FaultIsolateMinority, FaultCutClients, FaultSlow},
	"disk":      {FaultCorrupt, FaultDiskFull},
}

// ParseNemesis reads --nemesis: a comma-separated list of fault kinds and
// groups (all, process, partition, network, disk), or "none" (an empty
// list).
func ParseNemesis(s string) ([]FaultKind, error) {
	var kinds []FaultKind
	add := func(k FaultKind) {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	for _, name := range seedList(s) {
		if group, ok := FaultGroups[name]; ok {
			for _, k := range group {
				add(k)
			}
			continue
		}
		switch {
		case slices.Contains(AllFaults, FaultKind(name)):
			add(FaultKind(name))
		case name == "none":
		default:
			var names []string
			for _, k := range AllFaults {
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

// FaultStep is one entry of a nemesis schedule: stay quiet, then inflict
// the fault and hold it, then undo it. Whom a partition hits (the leader,
// the controller) is looked up when it starts; the draws here only make
// the choice repeatable.
type FaultStep struct {
	quiet     time.Duration // before the fault
	kind      FaultKind
	broker    int           // 0-based: the broker hit (kill, pause, minority, corrupt, disk-full)
	partition int32         // whose leader (partition-leader, partition-client)
	drop      bool          // partitions: close connections rather than blackhole them
	delay     time.Duration // slow: added to every chunk on the links between nodes
	truncate  bool          // corrupt: cut the segment's tail rather than flip a byte
	hold      time.Duration // how long the fault lasts
}

func (s FaultStep) String() string {
	mode := "blackhole"
	if s.drop {
		mode = "drop"
	}
	switch s.kind {
	case FaultRestart:
		return fmt.Sprintf("after %v quiet: rolling restart", s.quiet)
	case FaultKill:
		return fmt.Sprintf("after %v quiet: kill -9 broker %d for %v", s.quiet, s.broker+1, s.hold)
	case FaultIsolateLeader:
		return fmt.Sprintf("after %v quiet: isolate the leader of partition %d (%s) for %v", s.quiet, s.partition, mode, s.hold)
	case FaultIsolateController:
		return fmt.Sprintf("after %v quiet: isolate the active controller (%s) for %v", s.quiet, mode, s.hold)
	case FaultIsolateMinority:
		return fmt.Sprintf("after %v quiet: isolate a minority around broker %d (%s) for %v", s.quiet, s.broker+1, mode, s.hold)
	case FaultCutClients:
		return fmt.Sprintf("after %v quiet: cut clients from the leader of partition %d (%s) for %v", s.quiet, s.partition, mode, s.hold)
	case FaultSlow:
		return fmt.Sprintf("after %v quiet: delay links between brokers by %v for %v", s.quiet, s.delay, s.hold)
	case FaultReassign:
		return fmt.Sprintf("after %v quiet: reassign partition %d (its leader moved off) for up to %v", s.quiet, s.partition, s.hold)
	case FaultCorrupt:
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

// PlanFaults draws a schedule from seed: random faults among kinds on
// random brokers, with random quiet periods between them, fitting within
// window. The same arguments always give the same schedule.
func PlanFaults(seed int64, window time.Duration, kinds []FaultKind, brokers int) []FaultStep {
	if len(kinds) == 0 || brokers < 1 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x736b65696e)) // second word: "skein"
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)/int64(100*time.Millisecond)+1))*100*time.Millisecond
	}
	var plan []FaultStep
	var at time.Duration
	// A drawn fault that does not fit in what is left of the window is
	// drawn again (a rolling restart is long); the schedule ends when not
	// even the shortest fault would fit, or after maxDraws attempts.
	for draws := 0; draws < maxDraws && len(plan) < maxFaultSteps && at+minQuiet+minHold <= window-finalQuiet; draws++ {
		s := FaultStep{quiet: between(minQuiet, maxQuiet), kind: kinds[rng.IntN(len(kinds))], broker: rng.IntN(brokers),
			partition: int32(rng.IntN(MaxPartitions)), drop: rng.IntN(2) == 0, truncate: rng.IntN(2) == 0}
		length := time.Duration(brokers) * restartEstimate
		switch s.kind {
		case FaultRestart:
			s.broker = 0
		case FaultCorrupt:
			length = corruptEstimate
		default:
			s.hold = between(minHold, maxHold)
			length = s.hold
		}
		if s.kind == FaultSlow {
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

// JoinKinds lists fault kinds comma-separated.
func JoinKinds(kinds []FaultKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ",")
}
