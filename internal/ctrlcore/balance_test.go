package ctrlcore

import (
	"slices"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/balancer"
	"github.com/skein-log/skein/internal/metadata"
)

var balanced = metadata.TopicID{0: 8, 15: 2}

// balanceHarness is a harness over brokers 1..3 where topic "b" has four
// partitions on brokers 1 and 2 only (broker 3 just joined), with the
// balancer configured as cfg every interval.
func balanceHarness(t *testing.T, cfg balancer.Config, interval time.Duration) *harness {
	t.Helper()
	im := image(t, 1, 2, 3)
	var ps []metadata.Partition
	for i := range int32(4) {
		rs := []int32{1, 2}
		if i%2 == 1 {
			rs = []int32{2, 1}
		}
		ps = append(ps, metadata.Partition{Index: i, Replicas: rs, ISR: rs, Leader: rs[0]})
	}
	im, err := im.Apply(metadata.CreateTopic{Name: "b", ID: balanced, Partitions: ps})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, im)
	h.c.cfg.Balancer, h.c.cfg.BalanceInterval = cfg, interval
	h.catchUp()
	return h
}

// tick advances the clock by d, keeps brokers alive renewed, and runs a
// maintenance pass to its end.
func (h *harness) tick(d time.Duration, alive ...int32) {
	h.t.Helper()
	h.now = h.now.Add(d)
	for _, id := range alive {
		h.c.sessions[id] = &session{seen: h.now}
	}
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	h.settle()
}

func reassigning(im *metadata.Image) (n int, onto map[int32]int) {
	onto = map[int32]int{}
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if p.Reassigning() {
				n++
				for _, r := range p.AddingReplicas {
					onto[r]++
				}
			}
		}
	}
	return n, onto
}

// The balancer runs on the maintenance tick once its interval passed,
// starts no more reassignments than max concurrent moves allows (counting
// those in flight across ticks), and is off when the interval is 0.
func TestBalancerMovesOntoJoinedBrokerWithinTheBound(t *testing.T) {
	cfg := balancer.Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 10}

	off := balanceHarness(t, cfg, 0)
	off.tick(time.Hour, 2, 3)
	if n, _ := reassigning(off.im); n != 0 {
		t.Fatalf("balancer off: %d reassignments started", n)
	}

	h := balanceHarness(t, cfg, 10*time.Second)
	h.tick(5*time.Second, 2, 3)
	if n, _ := reassigning(h.im); n != 0 {
		t.Fatalf("before the interval: %d reassignments started", n)
	}
	h.tick(5*time.Second, 2, 3)
	n, onto := reassigning(h.im)
	if n != 2 || onto[3] != 2 {
		t.Fatalf("after the interval: %d reassignments, adding %v; want 2 onto broker 3", n, onto)
	}
	h.tick(10*time.Second, 2, 3)
	if n, _ := reassigning(h.im); n != 2 {
		t.Fatalf("with 2 in flight: %d reassignments, want still 2", n)
	}
}

// A fenced broker's replicas move only once it has been unavailable for
// the timeout, as counted by this controller.
func TestBalancerReplacesBrokerUnavailablePastTimeout(t *testing.T) {
	im, err := image(t, 1, 2, 3).Apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: 4, Epoch: 14}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, im)
	h.c.cfg.Balancer = balancer.Config{MaxConcurrentMoves: 10, UnavailableTimeout: time.Minute, ImbalancePercent: 10}
	h.c.cfg.BalanceInterval = time.Second
	h.catchUp()
	h.tick(3*time.Second, 2, 4) // 3's session expires: fenced
	if !h.broker(3).Fenced {
		t.Fatal("broker 3 not fenced")
	}
	h.tick(30*time.Second, 2, 4)
	if n, _ := reassigning(h.im); n != 0 {
		t.Fatalf("30s after fencing: %d reassignments", n)
	}
	h.tick(31*time.Second, 2, 4)
	p := partition(t, h.im)
	if !slices.Equal(p.TargetReplicas(), []int32{1, 2, 4}) || !slices.Equal(p.RemovingReplicas, []int32{3}) {
		t.Fatalf("past the timeout: %+v, want a move of 3's replica to 4", p)
	}
}
