package api

// AllocateProducerIds: version 0, controller listener only. Brokers reserve
// blocks of producer ids from the controller, which commits each block
// before handing it out, so no id is ever given twice in the cluster.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 67, MinVersion: 0, MaxVersion: 0, Handle: handleAllocateProducerIDs, ControllerOnly: true})
}

func handleAllocateProducerIDs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	s.Backend.Controller().AllocateProducerIDs(req.BrokerID, req.BrokerEpoch, func(start int64, n int32, err error) {
		resp.ErrorCode = ErrorCode(err)
		resp.ProducerIDStart = start
		resp.ProducerIDLen = n
		respond(resp)
	})
}
