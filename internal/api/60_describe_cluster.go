package api

// DescribeCluster: versions 0-1 (v1 adds the endpoint type; we describe
// brokers, type 1).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 60, MinVersion: 0, MaxVersion: 1, Handle: handleDescribeCluster})
}

func handleDescribeCluster(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	im := s.Backend.Image()
	resp.ClusterID = im.ClusterID()
	resp.ControllerID = s.Backend.NodeID()
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if req.Version >= 1 {
		resp.EndpointType = 1
	}
	for _, b := range liveBrokers(im, r.Listener) {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.id, b.ep.Host, b.ep.Port, b.rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	respond(resp)
}
