package replication

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRandomEventSequences drives Leaders with random interleavings of
// appends, fsyncs, fetches, ticks and controller answers (accept, reject,
// fence a follower, replay stale metadata), and checks after every step
// that the HW never goes back, never passes the durable end of a maximal
// ISR member once it moved past its starting value, that the leader is in
// every ISR and proposal, that expansions only add followers at or past the
// HW, and that a completed acks=all is backed by enough replicas.
func TestRandomEventSequences(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		if err := runRandomSequence(seed, 300); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

type randomRun struct {
	rng       *rand.Rand
	l         *Leader
	local     int32
	now       int64
	initialHW int64
	lastHW    int64
	offsets   map[int32]int64 // each follower's durable end, never decreasing
	inFlight  *ISRChange      // the proposal the "controller" has not answered
	history   []State         // committed states, for stale replays
}

func runRandomSequence(seed uint64, steps int) error {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	n := 1 + rng.IntN(5)
	replicas := make([]int32, n)
	for i := range replicas {
		replicas[i] = int32(10 + i)
	}
	local := replicas[rng.IntN(n)]
	isr := []int32{local}
	for _, r := range replicas {
		if r != local && rng.IntN(2) == 0 {
			isr = append(isr, r)
		}
	}
	cfg := Config{
		LocalID:                        local,
		ReplicaLagTimeMaxMs:            int64(10 + rng.IntN(100)),
		MinInsyncReplicas:              int32(1 + rng.IntN(4)),
		FreezeHighWatermarkUnderMinISR: rng.IntN(2) == 0,
	}
	logEnd := int64(rng.IntN(50))
	log := LocalLog{LogEndOffset: logEnd, DurableEnd: logEnd - int64(rng.IntN(int(logEnd)+1)), HighWatermark: int64(rng.IntN(int(logEnd) + 1))}
	log.DurableEnd = max(log.DurableEnd, log.HighWatermark)
	log.EpochStartOffset = logEnd
	st := State{Replicas: replicas, ISR: isr, Leader: local, LeaderEpoch: 3, PartitionEpoch: 7}
	l, err := NewLeader(cfg, st, log, 0)
	if err != nil {
		return fmt.Errorf("new leader: %w", err)
	}
	r := &randomRun{rng: rng, l: l, local: local, initialHW: log.HighWatermark, lastHW: l.HighWatermark(),
		offsets: map[int32]int64{}, history: []State{st}}
	for step := 0; step < steps; step++ {
		desc, err := r.step()
		if err != nil {
			return fmt.Errorf("step %d (%s): %w", step, desc, err)
		}
		if err := r.check(); err != nil {
			return fmt.Errorf("after step %d (%s): %w\nstate: %+v", step, desc, err, r.l.Snapshot())
		}
	}
	return nil
}

func (r *randomRun) step() (string, error) {
	r.now += int64(r.rng.IntN(30))
	snap := r.l.Snapshot()
	switch k := r.rng.IntN(10); {
	case k < 2:
		leo := snap.LogEndOffset + int64(r.rng.IntN(10))
		return fmt.Sprintf("append %d", leo), r.l.OnLocalAppend(leo, nil)
	case k < 4:
		d := snap.DurableEnd + int64(r.rng.IntN(int(snap.LogEndOffset-snap.DurableEnd)+1))
		_, err := r.l.OnLocalDurable(d)
		return fmt.Sprintf("durable %d", d), err
	case k < 7:
		if len(snap.Followers) == 0 {
			return "no follower", nil
		}
		f := snap.Followers[r.rng.IntN(len(snap.Followers))]
		from := max(r.offsets[f.ID], 0)
		off := from + int64(r.rng.IntN(int(snap.LogEndOffset-from)+1))
		if r.rng.IntN(20) == 0 {
			// A fetch for a slow follower that does not move at all.
			off = from
		}
		r.offsets[f.ID] = off
		_, err := r.l.OnFollowerFetch(f.ID, off, r.now)
		return fmt.Sprintf("fetch %d offset=%d t=%d", f.ID, off, r.now), err
	case k < 8:
		hw := r.l.HighWatermark()
		before := r.l.Snapshot()
		p := r.l.Tick(r.now, nil)
		if p != nil {
			r.inFlight = p
			if err := checkProposal(before, *p, hw); err != nil {
				return "tick", err
			}
		}
		return fmt.Sprintf("tick t=%d -> %v", r.now, p), nil
	default:
		return r.controllerAnswer()
	}
}

// controllerAnswer plays the controller: accept or refuse the proposal in
// flight, fence a follower on its own, or redeliver an old state.
func (r *randomRun) controllerAnswer() (string, error) {
	cur := r.l.State()
	switch r.rng.IntN(4) {
	case 0:
		if r.inFlight == nil || r.inFlight.PartitionEpoch != cur.PartitionEpoch {
			return "nothing to accept", nil
		}
		next := cur
		next.ISR = slices.Clone(r.inFlight.NewISR)
		next.PartitionEpoch++
		r.inFlight = nil
		return fmt.Sprintf("accept %v", next.ISR), r.commit(next)
	case 1:
		if r.inFlight == nil {
			return "nothing to reject", nil
		}
		errs := []error{kerr.InvalidUpdateVersion, kerr.IneligibleReplica, kerr.OperationNotAttempted, kerr.FencedLeaderEpoch,
			kerr.NotController, kerr.StaleBrokerEpoch, kerr.RequestTimedOut}
		cause := errs[r.rng.IntN(len(errs))]
		r.l.OnISRChangeRejected(*r.inFlight, cause)
		r.inFlight = nil
		return fmt.Sprintf("reject %v", cause), nil
	case 2:
		others := slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return id == r.local })
		if len(others) == 0 {
			return "nobody to fence", nil
		}
		gone := others[r.rng.IntN(len(others))]
		next := cur
		next.ISR = slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return id == gone })
		next.PartitionEpoch++
		return fmt.Sprintf("fence %d", gone), r.commit(next)
	default:
		old := r.history[r.rng.IntN(len(r.history))]
		_, err := r.l.OnISRCommitted(old, r.now)
		return fmt.Sprintf("replay partition epoch %d", old.PartitionEpoch), err
	}
}

func (r *randomRun) commit(st State) error {
	r.history = append(r.history, st.clone())
	_, err := r.l.OnISRCommitted(st, r.now)
	return err
}

// checkProposal: a shrink only removes, an expansion only adds followers
// whose durable end reached the HW and the epoch start, and the leader is
// always in it.
func checkProposal(before Snapshot, p ISRChange, hw int64) error {
	if p.PartitionEpoch != before.PartitionEpoch || p.LeaderEpoch != before.LeaderEpoch {
		return fmt.Errorf("proposal epochs %d/%d, state %d/%d", p.LeaderEpoch, p.PartitionEpoch, before.LeaderEpoch, before.PartitionEpoch)
	}
	if slices.Equal(p.NewISR, before.ISR) {
		return fmt.Errorf("proposal %v equals the isr", p.NewISR)
	}
	for _, id := range p.NewISR {
		if slices.Contains(before.ISR, id) {
			continue
		}
		i := slices.IndexFunc(before.Followers, func(f FollowerSnapshot) bool { return f.ID == id })
		if i < 0 {
			return fmt.Errorf("proposal adds %d, not a follower", id)
		}
		if off := before.Followers[i].Offset; off < hw || off < before.EpochStartOffset {
			return fmt.Errorf("proposal adds %d at offset %d, hw %d, epoch start %d", id, off, hw, before.EpochStartOffset)
		}
	}
	return nil
}

func (r *randomRun) check() error {
	snap := r.l.Snapshot()
	hw := snap.HighWatermark
	if hw < r.lastHW {
		return fmt.Errorf("hw went back from %d to %d", r.lastHW, hw)
	}
	r.lastHW = hw
	if err := checkSnapshot(snap, r.local, r.inFlight); err != nil {
		return err
	}
	if hw > r.initialHW {
		for _, id := range snap.MaximalISR {
			if id == r.local {
				continue
			}
			if off, ok := r.offsets[id]; !ok || off < hw {
				return fmt.Errorf("hw %d passed maximal isr member %d at %d (reported %v)", hw, id, off, ok)
			}
		}
	}
	minISR := min(int(r.l.cfg.MinInsyncReplicas), len(snap.Replicas))
	for _, target := range []int64{hw, hw + 1} {
		done, err := r.l.AckReady(target)
		if done != (target <= hw) {
			return fmt.Errorf("ack %d done=%v with hw %d", target, done, hw)
		}
		if done && err == nil && len(snap.MaximalISR) < minISR {
			return fmt.Errorf("ack %d succeeded with maximal isr %v below %d", target, snap.MaximalISR, minISR)
		}
	}
	return nil
}
