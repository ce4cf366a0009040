package ctrlcore

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

func heartbeat(id int32, epoch, offset int64) *kmsg.BrokerHeartbeatRequest {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, offset
	return req
}

func TestActionFor(t *testing.T) {
	unfenced := &metadata.Broker{}
	fenced := &metadata.Broker{Fenced: true}
	stopping := &metadata.Broker{InControlledShutdown: true}
	for _, tc := range []struct {
		name                              string
		br                                *metadata.Broker
		wantFence, wantShutdown, caughtUp bool
		want                              heartbeatAction
	}{
		{"alive stays", unfenced, false, false, true, stay},
		{"fenced and caught up is unfenced", fenced, false, false, true, unfence},
		{"fenced and behind stays fenced", fenced, false, false, false, stay},
		{"fenced wanting to stay fenced does", fenced, true, false, true, stay},
		{"fenced wanting to stop stays fenced", fenced, false, true, true, stay},
		{"alive wanting to be fenced is", unfenced, true, false, true, fence},
		{"wanting both is fenced", unfenced, true, true, true, fence},
		{"alive wanting to stop begins a controlled shutdown", unfenced, false, true, true, beginShutdown},
		{"a controlled shutdown begins once", stopping, false, true, true, stay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := actionFor(tc.br, tc.wantFence, tc.wantShutdown, tc.caughtUp); got != tc.want {
				t.Fatalf("actionFor = %v, want %v", got, tc.want)
			}
		})
	}
}

// Difference 7 of issue 11: the simulator's controller ignored
// WantShutdown and WantFence (it unfenced any caught-up broker and never
// began a controlled shutdown). Each case fails under that behaviour.
func TestHeartbeat(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fenced       bool  // broker 2 is fenced beforehand
		offset       int64 // its CurrentMetadataOffset (its epoch is 12)
		wantFence    bool
		wantShutdown bool
		epoch        int64 // 0: 12
		err          *kerr.Error
		res          api.BrokerHeartbeatResult
		proposes     bool
		leader       int32 // of the partition afterwards
	}{
		{name: "alive broker renews", offset: 20,
			res: api.BrokerHeartbeatResult{IsCaughtUp: true}, leader: 2},
		{name: "stale epoch", offset: 20, epoch: 9, err: kerr.StaleBrokerEpoch, leader: 2},
		{name: "fenced broker caught up is unfenced", fenced: true, offset: 11,
			res: api.BrokerHeartbeatResult{IsCaughtUp: true}, proposes: true, leader: 1},
		{name: "fenced broker behind its registration stays fenced", fenced: true, offset: 10,
			res: api.BrokerHeartbeatResult{IsFenced: true}, leader: 1},
		{name: "WantFence keeps a caught-up broker fenced", fenced: true, offset: 20, wantFence: true,
			res: api.BrokerHeartbeatResult{IsCaughtUp: true, IsFenced: true}, leader: 1},
		{name: "WantFence fences an alive broker", offset: 20, wantFence: true,
			res: api.BrokerHeartbeatResult{IsCaughtUp: true, IsFenced: true}, proposes: true, leader: 1},
		{name: "WantShutdown moves leaderships away first", offset: 20, wantShutdown: true,
			res: api.BrokerHeartbeatResult{IsCaughtUp: true, ShouldShutdown: true}, proposes: true, leader: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := image(t, 2, 1, 3) // broker 2 leads
			h := newHarness(t, im)
			h.catchUp()
			if tc.fenced {
				h.apply(metadata.FenceBroker{ID: 2, Epoch: 12}, metadata.PartitionChange{TopicID: topic, Leader: ptr(int32(1)), ISR: &[]int32{1, 3}})
			}
			req := heartbeat(2, 12, tc.offset)
			if tc.epoch != 0 {
				req.BrokerEpoch = tc.epoch
			}
			req.WantFence, req.WantShutdown = tc.wantFence, tc.wantShutdown
			var got api.BrokerHeartbeatResult
			var gotErr error = errors.New("unanswered")
			h.do(func(now time.Time, im *metadata.Image) Ready {
				return h.c.Heartbeat(now, im, req, nil, func(r api.BrokerHeartbeatResult, err error) { got, gotErr = r, err })
			})
			if (h.pending != nil) != tc.proposes {
				t.Fatalf("proposed %+v, want a proposal: %v", h.pending, tc.proposes)
			}
			h.settle()
			if tc.err != nil {
				if !errors.Is(gotErr, tc.err) {
					t.Fatalf("error %v, want %v", gotErr, tc.err)
				}
				return
			}
			if gotErr != nil || got != tc.res {
				t.Fatalf("answer %+v, %v; want %+v", got, gotErr, tc.res)
			}
			if l := partition(t, h.im).Leader; l != tc.leader {
				t.Fatalf("leader %d, want %d", l, tc.leader)
			}
			if tc.wantShutdown && !h.broker(2).InControlledShutdown {
				t.Fatal("broker 2 not in controlled shutdown")
			}
		})
	}
}

// Difference 8 of issue 11, for unfencing: node decided a heartbeat's
// unfencing (and the elections it allows) against the image when the
// heartbeat arrived. Two heartbeats of a fenced broker that arrive before
// the first's unfencing commits both did so, and the second's elections,
// computed without the first's, elected the partition's leader again.
// Decided at its turn, the second finds the broker unfenced and changes
// nothing.
func TestHeartbeatUnfencingDecidedAtItsTurn(t *testing.T) {
	h := newHarness(t, image(t, 2, 3))
	h.catchUp()
	// Both replicas fenced: the partition is leaderless with 2 in the ELR.
	h.apply(metadata.FenceBroker{ID: 3, Epoch: 13}, metadata.FenceBroker{ID: 2, Epoch: 12},
		metadata.PartitionChange{TopicID: topic, Leader: ptr(int32(metadata.NoLeader)), ISR: &[]int32{}, ELR: &[]int32{2}})
	before := partition(t, h.im).LeaderEpoch
	answers := 0
	for range 2 {
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.Heartbeat(now, im, heartbeat(2, 12, 100), nil, func(r api.BrokerHeartbeatResult, err error) {
				if err != nil || r.IsFenced {
					t.Errorf("heartbeat answer %+v, %v", r, err)
				}
				answers++
			})
		})
	}
	proposals := 0
	for h.pending != nil {
		h.commit()
		proposals++
	}
	p := partition(t, h.im)
	if answers != 2 || proposals != 1 || p.Leader != 2 || p.LeaderEpoch != before+1 {
		t.Fatalf("answers %d, proposals %d, leader %d at epoch %d (was %d); want 2, 1, 2 at %d",
			answers, proposals, p.Leader, p.LeaderEpoch, before, before+1)
	}
}

func TestRegisterStartsASessionOnItsConnection(t *testing.T) {
	h := newHarness(t, image(t, 1, 2))
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = 4, "c"
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "h4", 9092
	req.Listeners = append(req.Listeners, l)
	epoch := int64(-2)
	conn := "conn-4"
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Register(now, im, req, conn, func(e int64, err error) {
			if err != nil {
				t.Errorf("register: %v", err)
			}
			epoch = e
		})
	})
	h.settle()
	br := h.broker(4)
	if epoch != br.Epoch || len(br.Endpoints) != 1 || br.Endpoints[0].Host != "h4" {
		t.Fatalf("answered epoch %d, registered %+v", epoch, br)
	}
	if h.c.ConnClosed(conn) != true {
		t.Fatal("the registration's connection does not carry broker 4's session")
	}
	bad := *req
	bad.ClusterID = "other"
	var err error
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Register(now, im, &bad, nil, func(_ int64, e error) { err = e })
	})
	if !errors.Is(err, kerr.InconsistentClusterID) || h.pending != nil {
		t.Fatalf("other cluster: %v, proposed %+v", err, h.pending)
	}
}

func ptr[T any](v T) *T { return &v }

// The last broker of a partition's ISR to stop (every other replica is in
// a controlled shutdown, as when a whole cluster gets SIGTERM at once)
// has nobody to hand its leadership to: the controller makes the
// partition leaderless with the broker in the ELR (so it is elected
// cleanly when it returns) and lets it stop on its first heartbeat, as
// Kafka allows a broker to stop once it leads nothing another replica
// could lead; waiting would only end at the broker's shutdown timeout.
// The answer comes at commit (Ready.AnswersAtCommit), not once the
// controller's own node has taken over the leaderships the entry moves.
func TestHeartbeatLastBrokerStopsAtOnce(t *testing.T) {
	h := newHarness(t, image(t, 2, 1, 3)) // broker 2 leads
	h.catchUp()
	h.apply(metadata.BeginControlledShutdown{ID: 1, Epoch: 11}, metadata.BeginControlledShutdown{ID: 3, Epoch: 13},
		metadata.PartitionChange{TopicID: topic, ISR: &[]int32{2}})
	req := heartbeat(2, 12, 100)
	req.WantShutdown = true
	var got api.BrokerHeartbeatResult
	var gotErr error = errors.New("unanswered")
	h.do(func(now time.Time, im *metadata.Image) Ready {
		return h.c.Heartbeat(now, im, req, nil, func(r api.BrokerHeartbeatResult, err error) { got, gotErr = r, err })
	})
	h.settle()
	if gotErr != nil || !got.ShouldShutdown || h.atCommit != 1 {
		t.Fatalf("answer %+v, %v (%d at commit); want ShouldShutdown, at commit", got, gotErr, h.atCommit)
	}
	p := partition(t, h.im)
	if p.Leader != metadata.NoLeader || len(p.ISR) != 0 || len(p.ELR) != 1 || p.ELR[0] != 2 {
		t.Fatalf("partition %+v, want leaderless with ELR [2]", p)
	}
}

// A broker's replica capacity (its open-files limit) travels in a tagged
// field of its registration, through the wire encoding, into its broker
// record; a registration without it states none.
func TestRegistrationCarriesReplicaCapacity(t *testing.T) {
	h := newHarness(t, image(t, 1, 2))
	for _, capacity := range []int32{17_950, 0} {
		limit := int32(0)
		if capacity > 0 {
			limit = 20_000
		}
		s := NewBrokerSession(4, -1)
		sent, ok := s.Next(h.im, false, func() Registration {
			return Registration{ClusterID: "c", Listeners: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "h4", Port: 9092}}, ReplicaCapacity: capacity, OpenFilesLimit: limit}
		}).(*kmsg.BrokerRegistrationRequest)
		if !ok {
			t.Fatal("first request is not a registration")
		}
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.Version = sent.Version
		if err := req.ReadFrom(sent.AppendTo(nil)); err != nil {
			t.Fatalf("decode the registration: %v", err)
		}
		h.do(func(now time.Time, im *metadata.Image) Ready {
			return h.c.Register(now, im, req, nil, func(_ int64, err error) {
				if err != nil {
					t.Errorf("register: %v", err)
				}
			})
		})
		h.settle()
		if br := h.broker(4); br.ReplicaCapacity != capacity || br.OpenFilesLimit != limit {
			t.Fatalf("registered a replica capacity of %d and an open-files limit of %d, want %d and %d", br.ReplicaCapacity, br.OpenFilesLimit, capacity, limit)
		}
	}
}
