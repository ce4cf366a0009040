package ctrlcore

import (
	"slices"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// A reassignment is decided at its turn in the queue: submitted while an
// ISR shrink is in flight, it starts from the shrunk ISR; the added
// replica's joining the ISR completes it and moves the leadership off the
// removed leader.
func TestReassignDecidedAtItsTurn(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	im, err := h.im.Apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: 4, Epoch: 14}})
	if err != nil {
		t.Fatal(err)
	}
	h.im = im
	h.catchUp()
	p := partition(t, h.im)
	alter := func(isr ...int32) {
		p := partition(t, h.im)
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.AlterPartition(now, im, api.AlterPartitionParams{BrokerID: p.Leader, BrokerEpoch: 10 + int64(p.Leader), Topic: topic,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr},
				func(_ metadata.Partition, err error) {
					if err != nil {
						t.Errorf("ISR change to %v: %v", isr, err)
					}
				})
		})
	}
	alter(1, 2)
	var errs []error
	answered := false
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Reassign(now, im, []controller.Reassignment{{Topic: "t", Partition: 0, Target: []int32{2, 3, 4}}}, true,
			func(e []error, err error) {
				if err != nil {
					t.Errorf("reassign: %v", err)
				}
				errs, answered = e, true
			})
	})
	h.settle()
	if !answered || len(errs) != 1 || errs[0] != nil {
		t.Fatalf("answered %v, errs %v", answered, errs)
	}
	p = partition(t, h.im)
	if !slices.Equal(p.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(p.ISR, []int32{1, 2}) ||
		!slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("after the reassignment began: %+v", p)
	}
	alter(1, 2, 4)
	h.settle()
	p = partition(t, h.im)
	if !slices.Equal(p.Replicas, []int32{2, 3, 4}) || !slices.Equal(p.ISR, []int32{2, 4}) || p.Leader != 2 || p.Reassigning() {
		t.Fatalf("after 4 joined the ISR: %+v", p)
	}
}
