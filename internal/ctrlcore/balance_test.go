package ctrlcore

import (
	"fmt"
	"slices"
	"strings"
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
	im, err := im.Apply(metadata.CreateTopic{Name: "b", ID: balanced, Partitions: onBrokers1And2()})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, im)
	h.c.cfg.Balancer, h.c.cfg.BalanceInterval = cfg, interval
	h.catchUp()
	return h
}

// onBrokers1And2 is four partitions on brokers 1 and 2, their
// leaderships split between them.
func onBrokers1And2() []metadata.Partition {
	var ps []metadata.Partition
	for i := range int32(4) {
		rs := []int32{1, 2}
		if i%2 == 1 {
			rs = []int32{2, 1}
		}
		ps = append(ps, metadata.Partition{Index: i, Replicas: rs, ISR: rs, Leader: rs[0]})
	}
	return ps
}

// tick advances the clock by d, keeps brokers alive renewed, and runs a
// maintenance pass to its end; if the core asked for log directories,
// they are answered as reportOf says (nil: the request failed) and the
// pass runs again, as the runtime's next tick would.
func (h *harness) tick(d time.Duration, alive ...int32) {
	h.tickReporting(d, func(int32) *balancer.Report { return nil }, alive...)
}

func (h *harness) tickReporting(d time.Duration, reportOf func(int32) *balancer.Report, alive ...int32) {
	h.t.Helper()
	h.now = h.now.Add(d)
	for _, id := range alive {
		h.c.sessions[id] = &session{seen: h.now}
	}
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	h.settle()
	if len(h.asked) == 0 {
		return
	}
	for _, id := range h.asked {
		h.do(func(now time.Time, _ *metadata.Image) Ready { return h.c.LogDirsReported(now, id, reportOf(id)) })
	}
	h.asked = nil
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

// The balancer asks every unfenced broker for its log directories when a
// balance is due and decides on those answers: broker 1 reports topic
// "b"'s replicas as large and the others as empty, on equal disks, so
// moves go off broker 1 (onto 3, which holds nothing) and carry the
// sizes; a second round, with the moves in flight and counted against the
// destination at once, starts nothing more than the bound allows.
func TestBalancerMovesBytesOffFullestBrokerFromReports(t *testing.T) {
	cfg := balancer.Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 10,
		DiskImbalancePercent: 10, DiskMinImbalanceBytes: 1, MaxDiskUsagePercent: 90}
	h := balanceHarness(t, cfg, 10*time.Second)
	const gib = int64(1) << 30
	reports := func(id int32) *balancer.Report {
		r := balancer.Report{Disk: &balancer.Disk{Total: 100 * gib, Usable: 90 * gib}, Sizes: map[balancer.TopicPartition]int64{}}
		for i := range int32(4) {
			size := int64(0)
			if id == 1 {
				size = 5 * gib
			}
			if id != 3 {
				r.Sizes[balancer.TopicPartition{Topic: "b", Partition: i}] = size
			}
		}
		return &r
	}
	h.tickReporting(10*time.Second, reports, 2, 3)
	n, onto := reassigning(h.im)
	if n != 2 || onto[3] != 2 {
		t.Fatalf("%d reassignments adding %v; want 2 onto broker 3", n, onto)
	}
	var sized bool
	for _, note := range h.notes {
		if note.Msg == "balancer moves a replica" {
			sized = sized || strings.Contains(fmt.Sprint(note.Args...), "5.0 GiB")
		}
	}
	if !sized {
		t.Errorf("notes %v: want the moves' sizes", h.notes)
	}
	for _, p := range mustTopic(t, h.im, "b").Partitions {
		if p.Reassigning() && !slices.Contains(p.RemovingReplicas, 1) && !slices.Contains(p.RemovingReplicas, 2) {
			t.Errorf("partition %+v: a move not off 1 or 2", p)
		}
	}
}

// A broker whose answer failed (or never came) takes no replica while
// others reported their disks: its room is unknown.
func TestBalancerMovesNothingOntoUnreportedBroker(t *testing.T) {
	cfg := balancer.Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 10,
		DiskImbalancePercent: 10, DiskMinImbalanceBytes: 1, MaxDiskUsagePercent: 90}
	h := balanceHarness(t, cfg, 10*time.Second)
	h.tickReporting(10*time.Second, func(id int32) *balancer.Report {
		if id == 3 {
			return nil
		}
		return &balancer.Report{Disk: &balancer.Disk{Total: 100, Usable: 50}}
	}, 2, 3)
	if n, _ := reassigning(h.im); n != 0 {
		t.Fatalf("%d reassignments onto a broker that did not report its disk", n)
	}
}

func mustTopic(t *testing.T, im *metadata.Image, name string) *metadata.Topic {
	t.Helper()
	for _, tp := range im.Topics() {
		if tp.Name == name {
			return tp
		}
	}
	t.Fatalf("no topic %s", name)
	return nil
}

// With replica.balance.log.dirs.enable, a balance also decides moves
// between a reporting broker's log directories (the runtime sends them as
// AlterReplicaLogDirs), never of a partition being reassigned; without
// it, none.
func TestBalancerMovesBetweenLogDirs(t *testing.T) {
	for _, on := range []bool{true, false} {
		// Broker 3 just joined, so two partitions start moving onto it;
		// broker 1 holds all its bytes in /a.
		cfg := balancer.Config{MaxConcurrentMoves: 2, UnavailableTimeout: time.Minute, ImbalancePercent: 1000,
			DiskImbalancePercent: 10, DiskMinImbalanceBytes: 1, MaxDiskUsagePercent: 90, LogDirs: on}
		h := balanceHarness(t, cfg, 10*time.Second)
		reports := func(id int32) *balancer.Report {
			var rb balancer.ReportBuilder
			rb.Dir("/a", 1<<30, 1<<29, false)
			if id == 1 {
				for i := range int32(4) {
					rb.Replica("b", i, 1<<20, false)
				}
			}
			rb.Dir("/b", 1<<30, 1<<29, false)
			r := rb.Report()
			return &r
		}
		h.tickReporting(10*time.Second, reports, 2, 3)
		if n, _ := reassigning(h.im); n != 2 {
			t.Fatalf("LogDirs=%v: %d reassignments, want 2", on, n)
		}
		for _, m := range h.dirMoves {
			if mustTopic(t, h.im, "b").Partitions[m.Partition].Reassigning() {
				t.Fatalf("%v moves a partition being reassigned", m)
			}
		}
		switch {
		case !on && len(h.dirMoves) != 0:
			t.Fatalf("off: moves %v", h.dirMoves)
		case on && (len(h.dirMoves) != 1 || h.dirMoves[0].Broker != 1 || h.dirMoves[0].From != "/a" || h.dirMoves[0].To != "/b"):
			t.Fatalf("on: moves %v, want one of broker 1's replicas from /a to /b", h.dirMoves)
		}
	}
}

// The balancer plans with the replica capacities the brokers registered,
// so no round proposes a move the controller's check refuses: brokers 3
// and 4 joined, 3 with room for one replica; the first round moves one
// replica onto 3 and the rest of its bound onto 4 (planned blind to the
// capacity, the third move went onto 3 as well and was refused, and so
// again in every later round), and later rounds, with broker 3 full,
// propose nothing onto it.
func TestBalancerProposesNoMoveRefusedForCapacity(t *testing.T) {
	im := metadata.Empty("c")
	var recs []metadata.Record
	for _, id := range []int32{1, 2, 3, 4} {
		b := metadata.Broker{ID: id, Epoch: 10 + int64(id)}
		if id == 3 {
			b.ReplicaCapacity, b.OpenFilesLimit = 1, 1024
		}
		recs = append(recs, metadata.RegisterBroker{Broker: b})
	}
	recs = append(recs, metadata.CreateTopic{Name: "b", ID: balanced, Partitions: onBrokers1And2()})
	im, err := im.Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, im.WithVersion(20))
	h.c.cfg.Balancer = balancer.Config{MaxConcurrentMoves: 3, UnavailableTimeout: time.Minute, ImbalancePercent: 10}
	h.c.cfg.BalanceInterval = 10 * time.Second
	h.catchUp()
	h.tick(10*time.Second, 1, 2, 3, 4)
	n, onto := reassigning(h.im)
	if n != 3 || onto[3] != 1 || onto[4] != 2 {
		t.Fatalf("first round: %d reassignments adding %v, want 1 onto broker 3 (its capacity) and 2 onto 4", n, onto)
	}
	// One move completes (its new replica joined the ISR): room in the
	// bound, none on broker 3.
	tp, _ := h.im.Topic("b")
	for _, p := range tp.Partitions {
		if slices.Contains(p.AddingReplicas, 4) {
			target := p.TargetReplicas()
			isr := slices.Clone(target)
			h.apply(metadata.PartitionChange{TopicID: balanced, Partition: p.Index, Replicas: &target, ISR: &isr,
				AddingReplicas: &[]int32{}, RemovingReplicas: &[]int32{}})
			break
		}
	}
	for range 3 {
		h.tick(10*time.Second, 1, 2, 3, 4)
	}
	if len(h.refused) != 0 {
		t.Fatalf("balancer moves refused: %v", h.refused)
	}
	if _, onto := reassigning(h.im); onto[3] != 1 {
		t.Fatalf("later rounds: reassignments adding %v, want still 1 onto broker 3", onto)
	}
	if held := capacityHeld(h.im, 3); held > 1 {
		t.Fatalf("broker 3 lists %d replicas, past its capacity 1", held)
	}
}

// capacityHeld is the replicas im lists on broker id.
func capacityHeld(im *metadata.Image, id int32) int {
	n := 0
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				n++
			}
		}
	}
	return n
}
