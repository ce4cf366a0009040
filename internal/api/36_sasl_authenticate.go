package api

// SaslAuthenticate: versions 0-2. Carries one step of the mechanism's
// exchange chosen by SaslHandshake. A failure answers
// SASL_AUTHENTICATION_FAILED (after connection.failed.authentication.delay.ms)
// and the connection is closed. session_lifetime_ms (v1+) stays 0: the
// broker does not ask for re-authentication (KIP-368 is not served).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 36, MinVersion: 0, MaxVersion: 2, Handle: handleSaslAuthenticate, ForControllers: true})
}

func handleSaslAuthenticate(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if r.SASL == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate on a listener without SASL"
		resp.ErrorMessage = &msg
		respond(resp)
		return
	}
	r.SASL.Authenticate(req.SASLAuthBytes, func(code int16, message string, token []byte) {
		resp.ErrorCode = code
		if message != "" {
			resp.ErrorMessage = &message
		}
		resp.SASLAuthBytes = token
		respond(resp)
	})
}
