package api

// SaslAuthenticate: versions 0-2. Carries one step of the mechanism's
// exchange chosen by SaslHandshake. A failure answers
// SASL_AUTHENTICATION_FAILED (after connection.failed.authentication.delay.ms)
// and the connection is closed. session_lifetime_ms (v1+) is
// connections.max.reauth.ms for the listener and mechanism (0: the
// session does not expire); the client then re-authenticates on the same
// connection before it passes (KIP-368, node/conn_auth.go).

import (
	"time"

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
	r.SASL.Authenticate(r.Version, req.SASLAuthBytes, func(code int16, message string, token []byte, lifetime time.Duration) {
		resp.ErrorCode = code
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		if message != "" {
			resp.ErrorMessage = &message
		}
		resp.SASLAuthBytes = token
		respond(resp)
	})
}
