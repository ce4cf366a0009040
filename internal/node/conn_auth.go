package node

import (
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/sasl"
)

// connSASL is a connection's SASL authentication: the pure sasl.Session,
// and the effects it asks for (a delayed answer, a close, the principal).
// Every call comes from the connection's reader goroutine; only a delayed
// answer is sent from a timer.
type connSASL struct {
	c *conn
	s *sasl.Session
	// mechanism is the one the client chose, for the metric and logs.
	mechanism string
}

// newConnSASL starts authentication on a SASL listener; nil elsewhere.
func (b *Broker) newConnSASL(c *conn) *connSASL {
	set, ok := b.cfg.SASLOf(c.listener)
	if !ok {
		return nil
	}
	return &connSASL{c: c, s: sasl.NewSession(set.Mechanisms, set.PlainUsers, b.scramLookup), mechanism: "none"}
}

func (a *connSASL) Handshake(version int16, mechanism string, respond func([]string, int16)) {
	enabled, o := a.s.Handshake(version, mechanism)
	if o.Code == 0 {
		a.mechanism = mechanism
	} else {
		a.c.b.metrics.SASLAuthentication(a.c.listener, "unsupported", "failure")
		a.c.b.log.Info("closing connection: SASL mechanism not enabled", "listener", a.c.listener,
			"remote", a.c.nc.RemoteAddr().String(), "mechanism", mechanism, "enabled", enabled)
	}
	respond(enabled, o.Code)
	if o.Close {
		a.c.closeAfterAnswers()
	}
}

func (a *connSASL) Authenticate(token []byte, respond func(int16, string, []byte)) {
	o := a.s.Authenticate(token)
	finish := func() {
		respond(o.Code, o.Message, o.Token)
		if o.Close {
			a.c.closeAfterAnswers()
		}
	}
	if user, ok := a.s.Authenticated(); ok && o.Code == 0 {
		a.c.principal = api.Principal{Type: userPrincipalType, Name: user}
		if listenerPrincipal(a.c.b.cfg, a.c.listener) == api.BrokerPrincipal && a.c.b.cfg.SuperUsers[a.c.principal] {
			// A node's login on the cluster's own listener (Kafka:
			// brokers are super users).
			a.c.principal = api.BrokerPrincipal
		}
		a.c.b.metrics.SASLAuthentication(a.c.listener, a.mechanism, "success")
		a.c.b.log.Debug("authenticated", "listener", a.c.listener, "remote", a.c.nc.RemoteAddr().String(),
			"mechanism", a.mechanism, "principal", a.c.principal.String())
		finish()
		return
	}
	if o.Code == 0 {
		finish() // a step of a longer exchange
		return
	}
	// The token is never logged: for PLAIN it holds the password.
	a.c.b.metrics.SASLAuthentication(a.c.listener, a.mechanism, "failure")
	a.c.b.log.Info("closing connection: SASL authentication failed", "listener", a.c.listener,
		"remote", a.c.nc.RemoteAddr().String(), "mechanism", a.mechanism, "reason", o.Message)
	if d := a.c.b.cfg.FailedAuthenticationDelay; o.Delay && d > 0 {
		// The connection's reader goes on (and closes the connection if
		// the client sends anything else); one timer per failed
		// connection is all a guessing client costs meanwhile.
		time.AfterFunc(d, finish)
		return
	}
	finish()
}

// saslAllows says whether a request may be served on this connection
// before (or after) its authentication.
func (c *conn) saslAllows(key int16) bool {
	return c.sasl == nil || c.sasl.s.Allowed(key)
}

// saslSession is the api's view of the authentication: a nil interface,
// not a nil pointer, on listeners without SASL.
func (c *conn) saslSession() api.SASLSession {
	if c.sasl == nil {
		return nil
	}
	return c.sasl
}

// rawAuthenticate serves a bare token after a v0 SaslHandshake: the
// answer is the server's token as a bare size-prefixed frame; a failure
// has no answer in v0, the connection is closed (after the delay).
func (c *conn) rawAuthenticate(frame []byte) {
	s := &slot{raw: true, done: make(chan struct{})}
	c.enqueue(s)
	token := append([]byte(nil), frame...)
	c.sasl.Authenticate(token, func(code int16, _ string, reply []byte) {
		s.rawOK, s.rawToken = code == 0, reply
		s.respond(nil)
	})
}

// scramLookup finds a SCRAM credential in the current metadata image, so
// a user created or deleted through the controller counts on this broker
// as soon as the record is applied here.
func (b *Broker) scramLookup(mechanism, user string) (sasl.ScramCredential, bool) {
	return b.Image().ScramCredential(mechanism, user)
}
