package ctrlcore

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/metadata"
)

// BrokerSession is a broker's side of its session with the active
// controller: what to send next (a registration until one is granted, then
// heartbeats) and what an answer means. A granted registration counts only
// once the broker's own image holds it (Observe): clients are then served,
// and partitions take roles, from an image at least as new as the
// registration. Like Core it holds no lock and does no I/O; one request is
// in flight at a time.
type BrokerSession struct {
	id int32
	// epoch is the registered broker epoch, -1 until the image holds it.
	epoch int64
	// granted is a registration the controller granted that the image
	// does not hold yet, -1 if none.
	granted int64
	// previousClean is the epoch up to which this broker's logs are known
	// to have lost nothing: the previous process's, then this process's
	// own latest registration (sent as PreviousBrokerEpoch).
	previousClean int64
	inflight      bool
}

// Registration is what a broker tells the controller about itself.
type Registration struct {
	ClusterID   string
	Incarnation [16]byte
	Rack        string
	Listeners   []metadata.Endpoint
	LogDirs     []metadata.DirectoryID
	// ReplicaCapacity is how many replicas the broker can keep open (its
	// open-files limit), 0 if not limited; sent in a tagged field
	// (api.ReplicaCapacityTag).
	ReplicaCapacity int32
	// OpenFilesLimit is the limit ReplicaCapacity comes from (0: not said).
	OpenFilesLimit int32
}

// NewBrokerSession starts the session of broker id, whose previous
// process vouched for previousCleanEpoch (-1: nothing).
func NewBrokerSession(id int32, previousCleanEpoch int64) *BrokerSession {
	return &BrokerSession{id: id, epoch: -1, granted: -1, previousClean: previousCleanEpoch}
}

// Epoch is the registered broker epoch, -1 while not registered.
func (s *BrokerSession) Epoch() int64 { return s.epoch }

// PreviousCleanEpoch is the epoch this process vouches for.
func (s *BrokerSession) PreviousCleanEpoch() int64 { return s.previousClean }

// Awaiting reports a granted registration the image does not hold yet.
func (s *BrokerSession) Awaiting() bool { return s.granted >= 0 }

// Next is the request to send now: nil while one is in flight or a
// granted registration waits for the image. reg is called only when a
// registration is due.
func (s *BrokerSession) Next(im *metadata.Image, wantShutdown bool, reg func() Registration) kmsg.Request {
	if s.inflight || s.granted >= 0 {
		return nil
	}
	s.inflight = true
	if s.epoch < 0 {
		r := reg()
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.Version = 3
		req.BrokerID = s.id
		req.ClusterID = r.ClusterID
		req.IncarnationID = r.Incarnation
		for _, d := range r.LogDirs {
			req.LogDirs = append(req.LogDirs, d)
		}
		req.PreviousBrokerEpoch = s.previousClean
		api.TagReplicaCapacity(&req.UnknownTags, r.ReplicaCapacity, r.OpenFilesLimit)
		if r.Rack != "" {
			rack := r.Rack
			req.Rack = &rack
		}
		for _, l := range r.Listeners {
			rl := kmsg.NewBrokerRegistrationRequestListener()
			rl.Name, rl.Host, rl.Port = l.Listener, l.Host, uint16(l.Port)
			req.Listeners = append(req.Listeners, rl)
		}
		return req
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID = s.id
	req.BrokerEpoch = s.epoch
	req.CurrentMetadataOffset = im.Version()
	req.WantShutdown = wantShutdown
	return req
}

// Outcome is what an answer means for the runtime.
type Outcome struct {
	// Err is the request's failure: the transport's, or the answer's
	// error code.
	Err error
	// Stale: another registration superseded this one. No image is this
	// incarnation's until it registers again, so it gives up its roles
	// now (the controller is moving them anyway).
	Stale bool
	// ShouldShutdown: the controller has moved this broker's leaderships
	// away; its controlled shutdown may finish.
	ShouldShutdown bool
}

// Answered takes the answer to req (the last request Next returned), or
// the transport's error.
func (s *BrokerSession) Answered(req kmsg.Request, resp kmsg.Response, err error) Outcome {
	s.inflight = false
	if err != nil {
		return Outcome{Err: err}
	}
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return Outcome{Err: err}
		}
		if s.epoch < 0 {
			s.granted = r.BrokerEpoch
		}
		return Outcome{}
	case *kmsg.BrokerHeartbeatResponse:
		sent := req.(*kmsg.BrokerHeartbeatRequest).BrokerEpoch
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			out := Outcome{Err: err}
			if errors.Is(err, kerr.StaleBrokerEpoch) && s.epoch == sent {
				s.epoch = -1
				out.Stale = true
			}
			return out
		}
		return Outcome{ShouldShutdown: r.ShouldShutdown}
	}
	return Outcome{Err: fmt.Errorf("unexpected answer %T to the controller session", resp)}
}

// Observe takes a newly applied image. It reports whether the image holds
// the granted registration: the broker is then registered at that epoch,
// and this process vouches for it from now on (a re-registration, or a
// crash in the same kernel boot, loses nothing it wrote), which the
// runtime records durably.
func (s *BrokerSession) Observe(im *metadata.Image) bool {
	if s.granted < 0 {
		return false
	}
	br, ok := im.Broker(s.id)
	if !ok || br.Epoch < s.granted {
		return false
	}
	s.epoch, s.previousClean, s.granted = s.granted, s.granted, -1
	return true
}

// Abandon drops a granted registration the runtime gave up waiting for:
// the next step registers again.
func (s *BrokerSession) Abandon() { s.granted = -1 }

// StoppingNodes are the registered brokers that the image shows fenced or
// in a controlled shutdown: a stopping controller does not hand the
// quorum's leadership to one of them (quorum.Core.Resign), since a combined
// node in its controlled shutdown stops its quorum member next.
func StoppingNodes(im *metadata.Image) []int32 {
	if im == nil {
		return nil
	}
	var ids []int32
	for _, b := range im.Brokers() {
		if !im.IsActive(b.ID) {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// HandoverPossible reports whether broker id's controlled shutdown can do
// anything: some other broker is active (unfenced, not in a controlled
// shutdown of its own) to take over its leaderships and to drop it from
// the ISRs it leads. When none is (a whole cluster stopping at once, the
// last broker's turn) the stop need not wait: the controller could move
// nothing, and the wait would end only when the quorum, stopping too,
// stopped answering.
func HandoverPossible(im *metadata.Image, id int32) bool {
	if im == nil {
		return false
	}
	for _, b := range im.Brokers() {
		if b.ID != id && im.IsActive(b.ID) {
			return true
		}
	}
	return false
}
