package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/metadata"
)

// The broker's session with the active controller (broker_session.go's
// sessionLoop, registerWithController, sessionStep) and the controller's
// side of the controller-only APIs. Production's api handlers for those
// keys call a blocking ControllerBackend; here they answer from the
// decision's callback instead, with the same kmsg messages on the wire.

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

func (p *process) onRegistration(req *kmsg.BrokerRegistrationRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	if p.ctrl == nil {
		resp.ErrorCode = kerr.NotController.Code
		respond(resp)
		return
	}
	if req.ClusterID != p.image.ClusterID() {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		respond(resp)
		return
	}
	reg := controller.Registration{ID: req.BrokerID, PreviousBrokerEpoch: req.PreviousBrokerEpoch,
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: fmt.Sprintf("n%d", req.BrokerID), Port: 9092}}}
	for _, d := range req.LogDirs {
		reg.LogDirs = append(reg.LogDirs, metadata.DirectoryID(d))
	}
	p.registerBroker(reg, func(epoch int64, err error) {
		resp.ErrorCode = api.ErrorCode(err)
		resp.BrokerEpoch = epoch
		respond(resp)
	})
}

func (p *process) onHeartbeat(req *kmsg.BrokerHeartbeatRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	if p.ctrl == nil {
		resp.ErrorCode = kerr.NotController.Code
		respond(resp)
		return
	}
	p.heartbeat(req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, func(fenced bool, err error) {
		resp.ErrorCode = api.ErrorCode(err)
		resp.IsFenced = fenced
		respond(resp)
	})
}

func (p *process) onAlterPartition(req *kmsg.AlterPartitionRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if p.ctrl == nil || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		resp.ErrorCode = kerr.NotController.Code
		respond(resp)
		return
	}
	rt, rp := req.Topics[0], req.Topics[0].Partitions[0]
	p.alterPartition(req.BrokerID, req.BrokerEpoch, metadata.TopicID(rt.TopicID), rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR, func(err error) {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID
		sp := kmsg.NewAlterPartitionResponseTopicPartition()
		sp.Partition = rp.Partition
		sp.ErrorCode = api.ErrorCode(err)
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		respond(resp)
	})
}

func (p *process) onAllocateProducerIDs(req *kmsg.AllocateProducerIDsRequest, respond api.Respond) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if p.ctrl == nil {
		resp.ErrorCode = kerr.NotController.Code
		respond(resp)
		return
	}
	p.allocateProducerIDs(req.BrokerID, req.BrokerEpoch, func(start int64, err error) {
		resp.ErrorCode = api.ErrorCode(err)
		resp.ProducerIDStart = start
		resp.ProducerIDLen = pidBlock
		respond(resp)
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
