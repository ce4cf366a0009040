package node

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRProposalResentUntilOutcomeKnown: an AlterPartition whose outcome is
// unknown (simulator seed 16: the controller lost office after proposing
// the entry and answered NOT_CONTROLLER, and its successor committed it) is
// resent with a growing, capped backoff, never reported as a refusal; only
// a definite refusal is, and a proposal that metadata settled or a
// stopping broker ends the resends.
func TestISRProposalResentUntilOutcomeKnown(t *testing.T) {
	lost := errors.New("read tcp: connection reset by peer")
	ms := time.Millisecond
	for _, tc := range []struct {
		name        string
		answers     []error // one per send; the last repeats
		pendingFor  int     // pending() is true this many times, then false
		stopAfter   int     // wait returns false from this call on (0: never)
		wantRefusal error
		wantWaits   []time.Duration
	}{
		{name: "accepted at once", answers: []error{nil}, pendingFor: 99},
		{name: "refused at once", answers: []error{kerr.IneligibleReplica}, pendingFor: 99,
			wantRefusal: kerr.IneligibleReplica},
		{name: "stale view is a refusal the leader keeps pending", answers: []error{kerr.InvalidUpdateVersion}, pendingFor: 99,
			wantRefusal: kerr.InvalidUpdateVersion},
		{name: "unknown outcomes resent until accepted",
			answers:    []error{kerr.NotController, lost, kerr.StaleBrokerEpoch, kerr.RequestTimedOut, kerr.UnknownServerError, nil},
			pendingFor: 99, wantWaits: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms}},
		{name: "resent until refused", answers: []error{kerr.NotController, kerr.OperationNotAttempted}, pendingFor: 99,
			wantRefusal: kerr.OperationNotAttempted, wantWaits: []time.Duration{100 * ms}},
		{name: "backoff capped", answers: []error{kerr.NotController}, pendingFor: 7,
			wantWaits: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms, 2000 * ms}},
		{name: "metadata settled it", answers: []error{kerr.NotController}, pendingFor: 0,
			wantWaits: []time.Duration{100 * ms}},
		{name: "broker stopping", answers: []error{lost}, pendingFor: 99, stopAfter: 3,
			wantWaits: []time.Duration{100 * ms, 200 * ms, 400 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sends, pendingCalls := 0, 0
			var waits []time.Duration
			send := func() error {
				i := min(sends, len(tc.answers)-1)
				sends++
				if sends > 100 {
					t.Fatal("more than 100 sends")
				}
				return tc.answers[i]
			}
			pending := func() bool {
				pendingCalls++
				return pendingCalls <= tc.pendingFor
			}
			wait := func(d time.Duration) bool {
				waits = append(waits, d)
				return tc.stopAfter == 0 || len(waits) < tc.stopAfter
			}
			got := untilISROutcomeKnown(send, pending, wait)
			if !errors.Is(got, tc.wantRefusal) || (got == nil) != (tc.wantRefusal == nil) {
				t.Errorf("refusal %v, want %v", got, tc.wantRefusal)
			}
			if !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tc.wantWaits)
			}
			// Every send but the last followed a wait; the last ends the loop
			// unless a wait or pending() did.
			wantSends := len(tc.wantWaits) + 1
			if tc.stopAfter > 0 || tc.pendingFor < len(tc.wantWaits) {
				wantSends--
			}
			if sends != wantSends {
				t.Errorf("%d sends, want %d", sends, wantSends)
			}
		})
	}
}
