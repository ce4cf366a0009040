package ctrlcore

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// An unregistration is decided at its turn: queued behind a reassignment
// that adds the (running) broker as a replica, it sees that reassignment
// and is refused; once the move is cancelled the broker holds nothing and
// goes.
func TestUnregisterDecidedAtItsTurn(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	im, err := h.im.Apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: 4, Epoch: 14}})
	if err != nil {
		t.Fatal(err)
	}
	h.im = im
	h.catchUp()
	reassign := func(target []int32) {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.Reassign(now, im, []controller.Reassignment{{Topic: "t", Partition: 0, Target: target}}, true,
				func(errs []error, err error) {
					if err != nil || errs[0] != nil {
						t.Errorf("reassign to %v: %v %v", target, err, errs)
					}
				})
		})
	}
	var got []error
	unregister := func() {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.Unregister(now, im, 4, func(err error) { got = append(got, err) })
		})
	}
	reassign([]int32{1, 2, 4})
	unregister()
	h.settle()
	if len(got) != 1 || !errors.Is(got[0], kerr.InvalidRequest) {
		t.Fatalf("unregister behind a move onto broker 4: %v", got)
	}
	reassign(nil)
	unregister()
	h.settle()
	if len(got) != 2 || got[1] != nil {
		t.Fatalf("unregister after the cancel: %v", got)
	}
	if _, ok := h.im.Broker(4); ok {
		t.Fatal("broker 4 still registered")
	}
}
