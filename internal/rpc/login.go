package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// RoundTrip sends one request and returns its answer.
type RoundTrip func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

// maxLoginSteps bounds the SaslAuthenticate round trips of one login
// (SCRAM takes two): a peer that never ends the exchange is refused.
const maxLoginSteps = 8

// Login authenticates with SASL over roundTrip: SaslHandshake v1, then
// SaslAuthenticate v2 until the mechanism is done, the way Kafka's
// brokers log in to each other's SASL listeners. It returns the session
// lifetime the peer answered (KIP-368; 0: the session does not expire).
// No secret is ever part of an error.
func Login(ctx context.Context, m sasl.Mechanism, host string, roundTrip RoundTrip) (time.Duration, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := roundTrip(ctx, hs)
	if err != nil {
		return 0, fmt.Errorf("SASL handshake: %w", err)
	}
	hsResp := resp.(*kmsg.SASLHandshakeResponse)
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return 0, fmt.Errorf("SASL handshake: %s refused (the listener offers %v): %w", m.Name(), hsResp.SupportedMechanisms, err)
	}
	session, token, err := m.Authenticate(ctx, host)
	if err != nil {
		return 0, fmt.Errorf("SASL %s: %w", m.Name(), err)
	}
	for range maxLoginSteps {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		resp, err := roundTrip(ctx, auth)
		if err != nil {
			return 0, fmt.Errorf("SASL authenticate: %w", err)
		}
		authResp := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(authResp.ErrorCode); err != nil {
			msg := ""
			if authResp.ErrorMessage != nil {
				msg = ": " + *authResp.ErrorMessage
			}
			return 0, fmt.Errorf("SASL authenticate%s: %w", msg, err)
		}
		done, next, err := session.Challenge(authResp.SASLAuthBytes)
		if err != nil {
			return 0, fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		if done {
			if len(next) > 0 {
				return 0, fmt.Errorf("SASL %s: a last client message after the exchange is not served", m.Name())
			}
			return time.Duration(authResp.SessionLifetimeMillis) * time.Millisecond, nil
		}
		token = next
	}
	return 0, fmt.Errorf("SASL %s: no outcome after %d steps", m.Name(), maxLoginSteps)
}

// LoginUpgrade logs a freshly dialed (and perhaps TLS-upgraded)
// connection in, synchronously, before it carries anything else: for
// connections whose session is not renewed in place (the Raft transport
// reconnects when its peer closes an expired one).
func LoginUpgrade(m sasl.Mechanism, clientID string) Upgrade {
	return func(ctx context.Context, nc net.Conn) (net.Conn, error) {
		_, err := Login(ctx, m, nc.RemoteAddr().String(), syncRoundTrip(nc, clientID))
		if err != nil {
			return nil, err
		}
		return nc, nil
	}
}

// syncRoundTrip exchanges one request at a time on a connection no
// reader goroutine owns yet, within ctx's deadline (10 s without one).
func syncRoundTrip(nc net.Conn, clientID string) RoundTrip {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	var id int32
	return func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(10 * time.Second)
		}
		nc.SetDeadline(deadline)
		defer nc.SetDeadline(time.Time{})
		id++
		if _, err := nc.Write(f.AppendRequest(nil, req, id)); err != nil {
			return nil, err
		}
		// Unbuffered: nothing may be read past this answer, the
		// connection's own reader takes over from here.
		frame, err := readFrame(nc, 1<<20)
		if err != nil {
			return nil, err
		}
		resp := req.ResponseKind()
		return resp, decodeResponse(req, resp, frame)
	}
}

// errLoginClosed fails calls on a connection whose re-authentication
// failed.
var errLoginClosed = errors.New("rpc: re-authentication failed")
