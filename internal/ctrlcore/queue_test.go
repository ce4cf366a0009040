package ctrlcore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

func TestQueueBarrierFirstThenOneAtATime(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	var answered []string
	submit := func(name string, recs ...metadata.Record) {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.Submit(now, im, name, func(*metadata.Image) ([]metadata.Record, error) { return recs, nil },
				func(err error) {
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
					answered = append(answered, name)
				})
		})
	}
	submit("a", metadata.AllocateProducerIDs{NextID: 100})
	submit("b", metadata.AllocateProducerIDs{NextID: 200})
	if h.pending == nil || h.pending.Records != nil {
		t.Fatalf("first proposal of a term = %+v, want the barrier", h.pending)
	}
	h.commit()
	if h.pending == nil || h.pending.What != "a" {
		t.Fatalf("after the barrier: %+v, want a", h.pending)
	}
	if len(answered) != 0 {
		t.Fatalf("answered %v before anything committed", answered)
	}
	h.commit()
	if !slices.Equal(answered, []string{"a"}) || h.pending == nil || h.pending.What != "b" {
		t.Fatalf("after a: answered %v, in flight %+v", answered, h.pending)
	}
	h.commit()
	if !slices.Equal(answered, []string{"a", "b"}) || h.c.Busy() {
		t.Fatalf("answered %v, busy %v", answered, h.c.Busy())
	}
}

// Difference 8 of issue 11: node decided a fence against the image of
// the moment its session expired and committed those records later, so a
// decision committed in between (here an ISR shrink) was overwritten by
// records computed without it. Decided at its turn, the fence removes
// broker 2 from the ISR as it is then.
func TestQueueDecidesFencingAgainstTheImageOfItsTurn(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	p := partition(t, h.im)
	var isrErr error = errors.New("unanswered")
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.AlterPartition(now, im, api.AlterPartitionParams{BrokerID: 1, BrokerEpoch: 11, Topic: topic,
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}},
			func(_ metadata.Partition, err error) { isrErr = err })
	})
	if h.pending == nil {
		t.Fatal("ISR change not proposed")
	}
	// Broker 2 falls silent; its session expires while the shrink is in
	// flight.
	h.now = h.now.Add(timeout + time.Millisecond)
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Heartbeat(now, im, heartbeat(1, 11, 100), nil, func(api.BrokerHeartbeatResult, error) {})
	})
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Heartbeat(now, im, heartbeat(3, 13, 100), nil, func(api.BrokerHeartbeatResult, error) {})
	})
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	h.settle()
	if isrErr != nil {
		t.Fatalf("ISR change: %v", isrErr)
	}
	if !h.broker(2).Fenced {
		t.Fatal("broker 2 not fenced")
	}
	if got := partition(t, h.im).ISR; !slices.Equal(got, []int32{1}) {
		t.Fatalf("ISR after the shrink to [1 2] and the fence of 2 = %v, want [1]", got)
	}
	if h.fenced != 1 {
		t.Fatalf("Ready.Fenced summed to %d, want 1", h.fenced)
	}
}

func TestQueueRefusesRecordsThatDoNotApply(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	var got error
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Submit(now, im, "stale", func(*metadata.Image) ([]metadata.Record, error) {
			return []metadata.Record{metadata.FenceBroker{ID: 2, Epoch: 1}}, nil // not broker 2's epoch
		}, func(err error) { got = err })
	})
	if !errors.Is(got, kerr.InvalidRequest) || h.pending != nil {
		t.Fatalf("answer %v, in flight %+v; want INVALID_REQUEST and nothing proposed", got, h.pending)
	}
}

// A failed proposal may still commit: the next decision must not be taken
// before a barrier shows its outcome.
func TestQueueFailedProposalNeedsANewBarrier(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	var first, second error = errors.New("unanswered"), errors.New("unanswered")
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.AllocateProducerIDs(now, im, 2, 12, func(_ int64, _ int32, err error) { first = err })
	})
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.AllocateProducerIDs(now, im, 3, 13, func(_ int64, _ int32, err error) { second = err })
	})
	p := h.pending
	h.pending = nil
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.ProposalDone(now, im, p.ID, kerr.RequestTimedOut)
	})
	if !errors.Is(first, kerr.RequestTimedOut) {
		t.Fatalf("first = %v, want REQUEST_TIMED_OUT", first)
	}
	if h.pending == nil || h.pending.Records != nil {
		t.Fatalf("after a failure: in flight %+v, want a barrier", h.pending)
	}
	h.settle()
	if second != nil {
		t.Fatalf("second = %v", second)
	}
}

func TestDeactivateAnswersEverythingNotController(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	var errs []error
	for _, id := range []int32{2, 3} {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.AllocateProducerIDs(now, im, id, 10+int64(id), func(_ int64, _ int32, err error) { errs = append(errs, err) })
		})
	}
	stale := h.pending
	h.pending = nil
	h.do(func(now time.Time, _ *metadata.Image) Ready { return h.c.Deactivate(now) })
	if len(errs) != 2 || !errors.Is(errs[0], kerr.NotController) || !errors.Is(errs[1], kerr.NotController) {
		t.Fatalf("answers %v, want two NOT_CONTROLLER", errs)
	}
	// The old proposal's outcome arrives late: nothing happens.
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.ProposalDone(now, im, stale.ID, nil) })
	var late error
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.AllocateProducerIDs(now, im, 2, 12, func(_ int64, _ int32, err error) { late = err })
	})
	if !errors.Is(late, kerr.NotController) || h.pending != nil {
		t.Fatalf("inactive core: answer %v, in flight %+v", late, h.pending)
	}
}

func TestAllocateProducerIDsHandsOutDisjointBlocks(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	var starts []int64
	for _, tc := range []struct {
		id    int32
		epoch int64
		want  *kerr.Error
	}{{2, 12, nil}, {3, 13, nil}, {3, 99, kerr.StaleBrokerEpoch}} {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.AllocateProducerIDs(now, im, tc.id, tc.epoch, func(start int64, n int32, err error) {
				if !errors.Is(err, tc.want) && (err != nil || tc.want != nil) {
					t.Errorf("broker %d epoch %d: %v, want %v", tc.id, tc.epoch, err, tc.want)
				}
				if err == nil {
					if n != 10 {
						t.Errorf("block of %d", n)
					}
					starts = append(starts, start)
				}
			})
		})
		h.settle()
	}
	if len(starts) != 2 || starts[1] != starts[0]+10 {
		t.Fatalf("block starts %v, want two adjacent blocks of 10", starts)
	}
}

// A quorum that cannot commit a barrier fails the queue instead of
// holding it (or, in a runtime whose Propose fails at once, looping).
func TestQueueFailedBarrierFailsTheQueue(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	var errs []error
	for _, id := range []int32{2, 3} {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.AllocateProducerIDs(now, im, id, 10+int64(id), func(_ int64, _ int32, err error) { errs = append(errs, err) })
		})
	}
	b := h.pending
	if b == nil || b.Records != nil {
		t.Fatalf("in flight %+v, want a barrier", b)
	}
	h.pending = nil
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.ProposalDone(now, im, b.ID, kerr.NotController)
	})
	if len(errs) != 2 || !errors.Is(errs[0], kerr.NotController) || !errors.Is(errs[1], kerr.NotController) || h.pending != nil || h.c.Busy() {
		t.Fatalf("answers %v, in flight %+v, busy %v", errs, h.pending, h.c.Busy())
	}
	// Still active: the next decision tries a barrier again.
	h.catchUp()
}

// The ISR changes of one AlterPartition request are one decision and one
// entry; each is decided against the image holding the ones before it and
// refused on its own.
func TestAlterPartitionsDecidesARequestAsOneEntry(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	p := partition(t, h.im)
	shrink := api.AlterPartitionParams{BrokerID: 1, BrokerEpoch: 11, Topic: topic,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}}
	again := shrink // computed from the same, now stale, partition epoch
	again.NewISR = []int32{1}
	stale := shrink
	stale.BrokerEpoch = 10
	var res []api.AlterPartitionResult
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.AlterPartitions(now, im, []api.AlterPartitionParams{shrink, again, stale},
			func(r []api.AlterPartitionResult) { res = r })
	})
	if h.pending == nil || len(h.pending.Records) != 1 {
		t.Fatalf("proposed %+v, want one entry with the one accepted change", h.pending)
	}
	if res != nil {
		t.Fatalf("answered %+v before the entry committed", res)
	}
	h.commit()
	if len(res) != 3 {
		t.Fatalf("results %+v, want 3", res)
	}
	if res[0].Err != nil || !slices.Equal(res[0].Partition.ISR, []int32{1, 2}) {
		t.Errorf("shrink: %+v, want ISR [1 2]", res[0])
	}
	if !errors.Is(res[1].Err, kerr.InvalidUpdateVersion) {
		t.Errorf("second change of the same epoch: %v, want INVALID_UPDATE_VERSION", res[1].Err)
	}
	if !errors.Is(res[2].Err, kerr.StaleBrokerEpoch) {
		t.Errorf("stale broker epoch: %v, want STALE_BROKER_EPOCH", res[2].Err)
	}
}
