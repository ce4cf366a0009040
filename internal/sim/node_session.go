package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/ctrlcore"
	"github.com/skein-log/skein/internal/metadata"
)

// The broker's session with the active controller: ctrlcore.BrokerSession,
// which node's sessionLoop drives too, on the event queue. The controller
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
	req := p.sess.Next(p.image, false, p.registration)
	if req == nil {
		return nil // one in flight, or a granted registration waits for the image
	}
	p.call(p.controller, req, func(resp kmsg.Response, err error) {
		out := p.sess.Answered(req, resp, err)
		if out.Stale {
			p.n.tracef("broker epoch %d is stale; registering again", p.brokerEpoch)
			p.brokerEpoch = -1
			p.reconcile()
		}
		if p.sess.Awaiting() {
			p.setImage(p.image, "") // it may already hold it
			p.reconcile()
		}
	})
	return nil
}

// registration is what this broker registers with.
func (p *process) registration() ctrlcore.Registration {
	return ctrlcore.Registration{ClusterID: p.image.ClusterID(), LogDirs: []metadata.DirectoryID{p.n.dirID},
		Listeners:       []metadata.Endpoint{{Listener: "PLAINTEXT", Host: fmt.Sprintf("n%d", p.n.id), Port: 9092}},
		ReplicaCapacity: p.n.c.registeredCapacity(p)}
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
