package api

// DescribeCluster: versions 0-2 (v1 adds the endpoint type; we describe
// brokers, type 1; v2 adds IncludeFencedBrokers and IsFenced, KIP-1073).
//
// The controller id is the active controller, as this broker knows it
// (-1 while none is known). Metadata instead names this broker, as Kafka
// does in KRaft mode: clients send "controller" admin requests there, and
// any broker forwards them (KIP-590). DescribeCluster is what tools read
// to show who decides, so it tells the truth.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 60, MinVersion: 0, MaxVersion: 2, Handle: handleDescribeCluster})
}

func handleDescribeCluster(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	im := s.Backend.Image()
	resp.ClusterID = im.ClusterID()
	resp.ControllerID = s.Backend.ActiveControllerID()
	resp.ClusterAuthorizedOperations = s.clusterAuthorizedOperations(r, req.IncludeClusterAuthorizedOperations)
	if req.Version >= 1 {
		resp.EndpointType = 1
	}
	includeFenced := req.Version >= 2 && req.IncludeFencedBrokers
	for _, b := range im.Brokers() {
		if b.Fenced && !includeFenced {
			continue
		}
		ep, ok := endpointFor(b, r.Listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, ep.Host, ep.Port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		rb.IsFenced = b.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	respond(resp)
}
