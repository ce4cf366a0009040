package ctrlcore

import (
	"slices"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

func TestSessions(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before the tick: broker 2 heartbeats at hbAt (after activation
		// at t0) on conn "c2" unless hbAt < 0; then events run.
		hbAt   time.Duration
		events func(h *harness)
		tickAt time.Duration
		fenced []int32 // of 1 (self), 2, 3, which end up fenced
	}{
		{name: "renewed within the timeout", hbAt: time.Second, tickAt: 2500 * time.Millisecond, fenced: []int32{3}},
		{name: "silent past the timeout", hbAt: -1, tickAt: timeout + time.Millisecond, fenced: []int32{2, 3}},
		{name: "at the timeout exactly, not yet", hbAt: -1, tickAt: timeout, fenced: nil},
		{name: "its connection closed", hbAt: time.Second, tickAt: 1100 * time.Millisecond, fenced: []int32{2},
			events: func(h *harness) { h.c.ConnClosed("c2") }},
		{name: "another connection closing changes nothing", hbAt: time.Second, tickAt: 1100 * time.Millisecond,
			events: func(h *harness) { h.c.ConnClosed("c9") }},
		{name: "its port refuses connections", hbAt: -1, tickAt: time.Millisecond, fenced: []int32{3},
			events: func(h *harness) { h.c.Unreachable(3) }},
		{name: "self is never fenced", hbAt: -1, tickAt: time.Hour, fenced: []int32{2, 3},
			events: func(h *harness) { h.c.ConnClosed("self") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, image(t, 1, 2, 3))
			if tc.hbAt >= 0 {
				h.now = t0.Add(tc.hbAt)
				h.do(func(now time.Time, im *metadata.Image) Ready {
					return h.c.Heartbeat(now, im, heartbeat(2, 12, 100), "c2", func(api.BrokerHeartbeatResult, error) {})
				})
				h.settle()
			}
			if tc.events != nil {
				tc.events(h)
			}
			h.now = t0.Add(tc.tickAt)
			h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
			h.settle()
			var fenced []int32
			for _, br := range h.im.Brokers() {
				if br.Fenced {
					fenced = append(fenced, br.ID)
				}
			}
			if !slices.Equal(fenced, tc.fenced) {
				t.Fatalf("fenced %v, want %v", fenced, tc.fenced)
			}
			if h.fenced != len(tc.fenced) {
				t.Fatalf("Ready.Fenced summed to %d, want %d", h.fenced, len(tc.fenced))
			}
		})
	}
}

// One maintenance pass is queued at a time, however often the runtime
// ticks while a proposal is in flight.
func TestTickQueuesOnePass(t *testing.T) {
	h := newHarness(t, image(t, 1, 2, 3))
	h.catchUp()
	h.now = t0.Add(time.Hour) // 2 and 3 expired
	for range 5 {
		h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	}
	proposals := 0
	for h.pending != nil {
		h.commit()
		proposals++
	}
	if proposals != 1 || h.c.Busy() {
		t.Fatalf("%d proposals, busy %v; want one pass", proposals, h.c.Busy())
	}
}

// A broker the core has no session for (registered while this controller
// caught up) gets one at the first pass instead of being fenced.
func TestFirstSightStartsASession(t *testing.T) {
	h := newHarness(t, image(t, 1, 2))
	h.catchUp()
	h.apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: 5, Epoch: 30}})
	if got := h.c.Unseen(h.im); !slices.Equal(got, []int32{2, 5}) {
		t.Fatalf("Unseen = %v, want [2 5]", got)
	}
	h.now = t0.Add(time.Second)
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	h.settle()
	if h.broker(5).Fenced {
		t.Fatal("broker 5 fenced at first sight")
	}
	h.now = t0.Add(time.Second + timeout + time.Millisecond)
	h.do(func(now time.Time, im *metadata.Image) Ready { return h.c.Tick(now, im) })
	h.settle()
	if !h.broker(5).Fenced {
		t.Fatal("broker 5 not fenced once its first-sight session expired")
	}
}
