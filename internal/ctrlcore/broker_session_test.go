package ctrlcore

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/metadata"
)

func testRegistration() Registration {
	return Registration{ClusterID: "c", Listeners: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092}},
		LogDirs: []metadata.DirectoryID{{1: 1}}}
}

// registered runs a session through its registration at epoch.
func registered(t *testing.T, epoch int64) (*BrokerSession, *metadata.Image) {
	t.Helper()
	s := NewBrokerSession(2, 5)
	im := image(t, 1, 3)
	req, ok := s.Next(im, false, testRegistration).(*kmsg.BrokerRegistrationRequest)
	if !ok {
		t.Fatalf("first request is not a registration")
	}
	if req.PreviousBrokerEpoch != 5 || req.ClusterID != "c" || len(req.Listeners) != 1 || req.Listeners[0].Port != 9092 || req.Rack != nil || len(req.LogDirs) != 1 {
		t.Fatalf("registration %+v", req)
	}
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = epoch
	if out := s.Answered(req, resp, nil); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !s.Awaiting() || s.Next(im, false, testRegistration) != nil {
		t.Fatal("a granted registration must wait for the image")
	}
	if s.Observe(im) {
		t.Fatal("observed a registration the image does not hold")
	}
	im, err := im.Apply(metadata.RegisterBroker{Broker: metadata.Broker{ID: 2, Epoch: epoch}})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Observe(im) || s.Epoch() != epoch || s.PreviousCleanEpoch() != epoch || s.Awaiting() {
		t.Fatalf("after the image holds it: epoch %d, clean %d, awaiting %v", s.Epoch(), s.PreviousCleanEpoch(), s.Awaiting())
	}
	return s, im
}

func TestBrokerSessionHeartbeats(t *testing.T) {
	for _, tc := range []struct {
		name         string
		code         int16
		sentEpoch    int64 // 0: the current one
		shutdown     bool
		wantStale    bool
		wantShutdown bool
		wantErr      *kerr.Error
		next         string // "heartbeat" or "registration"
	}{
		{name: "renewed", next: "heartbeat"},
		{name: "told to shut down", shutdown: true, wantShutdown: true, next: "heartbeat"},
		{name: "stale epoch registers again", code: kerr.StaleBrokerEpoch.Code, wantStale: true, wantErr: kerr.StaleBrokerEpoch, next: "registration"},
		{name: "stale answer to an older epoch changes nothing", code: kerr.StaleBrokerEpoch.Code, sentEpoch: 3, wantErr: kerr.StaleBrokerEpoch, next: "heartbeat"},
		{name: "not controller", code: kerr.NotController.Code, wantErr: kerr.NotController, next: "heartbeat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, im := registered(t, 40)
			req, ok := s.Next(im, true, testRegistration).(*kmsg.BrokerHeartbeatRequest)
			if !ok || req.BrokerEpoch != 40 || req.CurrentMetadataOffset != im.Version() || !req.WantShutdown {
				t.Fatalf("heartbeat %+v", req)
			}
			if s.Next(im, false, testRegistration) != nil {
				t.Fatal("a second request while one is in flight")
			}
			if tc.sentEpoch != 0 {
				req.BrokerEpoch = tc.sentEpoch
			}
			resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
			resp.ErrorCode, resp.ShouldShutdown = tc.code, tc.shutdown
			out := s.Answered(req, resp, nil)
			if out.Stale != tc.wantStale || out.ShouldShutdown != tc.wantShutdown || (tc.wantErr == nil) != (out.Err == nil) ||
				(tc.wantErr != nil && !errors.Is(out.Err, tc.wantErr)) {
				t.Fatalf("outcome %+v", out)
			}
			next := s.Next(im, false, testRegistration)
			switch next.(type) {
			case *kmsg.BrokerHeartbeatRequest:
				if tc.next != "heartbeat" {
					t.Fatalf("next is a heartbeat, want %s", tc.next)
				}
			case *kmsg.BrokerRegistrationRequest:
				if tc.next != "registration" || s.Epoch() != -1 {
					t.Fatalf("next is a registration (epoch %d), want %s", s.Epoch(), tc.next)
				}
			default:
				t.Fatalf("next %T", next)
			}
		})
	}
}

func TestBrokerSessionLostAnswerAndAbandon(t *testing.T) {
	s := NewBrokerSession(2, -1)
	im := image(t, 1)
	req := s.Next(im, false, testRegistration)
	if out := s.Answered(req, nil, errors.New("timed out")); out.Err == nil {
		t.Fatal("a lost answer is no error")
	}
	req = s.Next(im, false, testRegistration)
	if req == nil {
		t.Fatal("no retry after a lost answer")
	}
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = 30
	s.Answered(req, resp, nil)
	s.Abandon()
	if _, ok := s.Next(im, false, testRegistration).(*kmsg.BrokerRegistrationRequest); !ok || s.Awaiting() {
		t.Fatal("an abandoned registration is not sent again")
	}
}

// A stopping broker waits for its controlled shutdown only while another
// broker is active to take over: with every other one fenced or stopping
// too (SIGTERM to a whole cluster at once), the last one stops at once
// instead of waiting until the quorum stops answering. StoppingNodes names
// the fenced and stopping brokers, which a stopping controller does not
// hand the quorum's leadership to.
func TestHandoverPossible(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ids      []int32
		recs     []metadata.Record
		want     bool
		nilIm    bool
		stopping []int32
	}{
		{name: "no image", nilIm: true},
		{name: "the only broker", ids: []int32{2}},
		{name: "others active", ids: []int32{2, 1, 3}, want: true},
		{name: "itself already stopping, others active", ids: []int32{2, 1, 3},
			recs: []metadata.Record{metadata.BeginControlledShutdown{ID: 2, Epoch: 12}}, want: true, stopping: []int32{2}},
		{name: "one other stopping, one active", ids: []int32{2, 1, 3},
			recs: []metadata.Record{metadata.BeginControlledShutdown{ID: 1, Epoch: 11}}, want: true, stopping: []int32{1}},
		{name: "every other one stopping", ids: []int32{2, 1, 3},
			recs: []metadata.Record{metadata.BeginControlledShutdown{ID: 1, Epoch: 11}, metadata.BeginControlledShutdown{ID: 3, Epoch: 13}}, stopping: []int32{1, 3}},
		{name: "one fenced, one stopping", ids: []int32{2, 1, 3},
			recs: []metadata.Record{metadata.FenceBroker{ID: 1, Epoch: 11}, metadata.BeginControlledShutdown{ID: 3, Epoch: 13}}, stopping: []int32{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var im *metadata.Image
			if !tc.nilIm {
				im = image(t, tc.ids...)
				var err error
				if im, err = im.Apply(tc.recs...); err != nil {
					t.Fatal(err)
				}
			}
			if got := HandoverPossible(im, 2); got != tc.want {
				t.Fatalf("HandoverPossible = %v, want %v", got, tc.want)
			}
			if got := StoppingNodes(im); !slices.Equal(got, tc.stopping) {
				t.Fatalf("StoppingNodes = %v, want %v", got, tc.stopping)
			}
		})
	}
}
