package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker's session with the active controller (broker_session.go's
// sessionLoop, registerWithController, sessionStep). The controller
// answers through the real handlers of internal/api (node_controller.go).

func (p *process) sessionLoop() {
	wait := heartbeatInterval
	if err := p.sessionStep(); err != nil {
		wait = min(heartbeatInterval, 100*time.Millisecond)
	}
	p.n.after(wait, p.sessionLoop)
}

func (p *process) sessionStep() error {
	if p.controller < 0 {
		return errors.New("no active controller known")
	}
	if p.registering {
		return nil
	}
	if p.brokerEpoch < 0 {
		if p.pendingEpoch > 0 {
			return nil // granted; waiting for the image to hold it
		}
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.Version = 3
		req.BrokerID = p.n.id
		req.ClusterID = p.image.ClusterID()
		req.LogDirs = [][16]byte{p.n.dirID}
		req.PreviousBrokerEpoch = p.previousCleanEpoch
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port = "PLAINTEXT", fmt.Sprintf("n%d", p.n.id), 9092
		req.Listeners = append(req.Listeners, l)
		p.registering = true
		p.call(p.controller, req, func(resp kmsg.Response, err error) {
			p.registering = false
			if err == nil {
				r := resp.(*kmsg.BrokerRegistrationResponse)
				if err = kerr.ErrorForCode(r.ErrorCode); err == nil {
					p.pendingEpoch = r.BrokerEpoch
					p.setImage(p.image, "") // it may already hold it
					p.reconcile()
				}
			}
		})
		return nil
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID = p.n.id
	req.BrokerEpoch = p.brokerEpoch
	req.CurrentMetadataOffset = p.image.Version()
	sentEpoch := p.brokerEpoch
	p.call(p.controller, req, func(resp kmsg.Response, err error) {
		if err != nil {
			return
		}
		hb := resp.(*kmsg.BrokerHeartbeatResponse)
		if errors.Is(kerr.ErrorForCode(hb.ErrorCode), kerr.StaleBrokerEpoch) && p.brokerEpoch == sentEpoch {
			p.n.tracef("broker epoch %d is stale; registering again", sentEpoch)
			p.brokerEpoch = -1
			p.reconcile()
		}
	})
	return nil
}

// call sends a request from this process and drops the answer if the
// process died meanwhile.
func (p *process) call(to int32, req kmsg.Request, cb func(kmsg.Response, error)) {
	p.callTimeout(to, req, rpcTimeout, cb)
}

func (p *process) callTimeout(to int32, req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	n, inc := p.n, p.n.incarnation
	n.c.call(n.id, to, req, timeout, func(r kmsg.Response, err error) {
		n.runIf(inc, func() { cb(r, err) })
	})
}

// allocateProducerID hands out an id from this broker's block and asks
// the controller for the next block when it runs out (the caller retries:
// the api handler cannot wait).
func (p *process) allocateProducerID() (int64, error) {
	if p.pidNext < p.pidEnd {
		id := p.pidNext
		p.pidNext++
		return id, nil
	}
	if !p.pidAsking && p.controller >= 0 && p.brokerEpoch >= 0 {
		p.pidAsking = true
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID = p.n.id
		req.BrokerEpoch = p.brokerEpoch
		p.call(p.controller, req, func(resp kmsg.Response, err error) {
			p.pidAsking = false
			if err != nil {
				return
			}
			r := resp.(*kmsg.AllocateProducerIDsResponse)
			if r.ErrorCode == 0 {
				p.pidNext, p.pidEnd = r.ProducerIDStart, r.ProducerIDStart+int64(r.ProducerIDLen)
			}
		})
	}
	return -1, fmt.Errorf("%w: fetching a producer id block", kerr.CoordinatorLoadInProgress)
}
