package api

// SaslHandshake: versions 0-1. The client names a mechanism; the answer
// lists the enabled ones. After v1 the exchange travels in SaslAuthenticate
// requests; after v0 as bare size-prefixed tokens, which the connection
// reads itself (node/conn_auth.go). On a listener without SASL the answer
// is ILLEGAL_SASL_STATE, as Kafka's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 17, MinVersion: 0, MaxVersion: 1, Handle: handleSaslHandshake, ForControllers: true})
}

func handleSaslHandshake(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if r.SASL == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		respond(resp)
		return
	}
	r.SASL.Handshake(r.Version, req.Mechanism, func(enabled []string, code int16) {
		resp.ErrorCode = code
		resp.SupportedMechanisms = enabled
		respond(resp)
	})
}
