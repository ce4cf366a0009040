package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	s := sasl.NewSession(set.Mechanisms, set.PlainUsers, b.scramLookup)
	s.LimitLifetime(set.MaxReauth)
	if b.jwks != nil {
		s.ValidateOAuth(b.jwks.validator)
	}
	return &connSASL{c: c, s: s, mechanism: "none"}
}

func (a *connSASL) Handshake(version int16, mechanism string, respond func([]string, int16)) {
	enabled, o := a.s.Handshake(version, mechanism)
	switch {
	case o.Code == 0:
		a.mechanism = mechanism
	case o.Code == kerr.UnsupportedSaslMechanism.Code:
		a.c.b.metrics.SASLAuthentication(a.c.listener, "unsupported", "failure")
		a.c.b.logger(loggerConnection).Info("closing connection: SASL mechanism not enabled", "listener", a.c.listener,
			"remote", a.c.nc.RemoteAddr().String(), "mechanism", mechanism, "enabled", enabled)
	default:
		a.c.b.logger(loggerConnection).Info("SaslHandshake refused", "listener", a.c.listener, "remote", a.c.nc.RemoteAddr().String(),
			"mechanism", mechanism, "version", version, "reason", o.Message, "closing", o.Close)
	}
	respond(enabled, o.Code)
	if o.Close {
		a.c.closeAfterAnswers()
	}
}

// Authenticate serves one SaslAuthenticate (version is the request's; 0
// for a bare token). The request arrived just now: the reader serves it
// as soon as it is decoded.
func (a *connSASL) Authenticate(version int16, token []byte, respond func(code int16, message string, token []byte, lifetime time.Duration)) {
	reauth := a.s.Reauthenticating()
	o := a.s.Authenticate(token, version, a.c.b.opts.AuthClock())
	if o.RefreshKeys && a.c.b.jwks != nil {
		a.c.b.jwks.kick()
	}
	finish := func() {
		respond(o.Code, o.Message, o.Token, o.SessionLifetime)
		if o.Close {
			a.c.closeAfterAnswers()
		}
	}
	success, failure := "success", "failure"
	if reauth {
		success, failure = "reauthentication_success", "reauthentication_failure"
	}
	if user, ok := a.s.Authenticated(); ok && o.Code == 0 {
		// On a re-authentication the user is the same (the session
		// refuses another), so the principal is too: requests read
		// before it keep the one they were read under.
		a.c.principal = api.Principal{Type: userPrincipalType, Name: user}
		if listenerPrincipal(a.c.b.cfg, a.c.listener) == api.BrokerPrincipal && a.c.b.cfg.SuperUsers[a.c.principal] {
			// A node's login on the cluster's own listener (Kafka:
			// brokers are super users).
			a.c.principal = api.BrokerPrincipal
		}
		a.c.b.metrics.SASLAuthentication(a.c.listener, a.mechanism, success)
		a.c.b.logger(loggerConnection).Debug("authenticated", "listener", a.c.listener, "remote", a.c.nc.RemoteAddr().String(),
			"mechanism", a.mechanism, "principal", a.c.principal.String(), "reauthentication", reauth,
			"session_lifetime", o.SessionLifetime)
		finish()
		return
	}
	if o.Code == 0 {
		finish() // a step of a longer exchange
		return
	}
	// The token is never logged: for PLAIN it holds the password, for
	// OAUTHBEARER it is the bearer credential.
	reason := o.Message
	if o.Reason != "" {
		reason = o.Reason
	}
	a.c.b.metrics.SASLAuthentication(a.c.listener, a.mechanism, failure)
	a.c.b.logger(loggerConnection).Info("closing connection: SASL authentication failed", "listener", a.c.listener,
		"remote", a.c.nc.RemoteAddr().String(), "mechanism", a.mechanism, "reason", reason, "reauthentication", reauth)
	if d := a.c.b.cfg.FailedAuthenticationDelay; o.Delay && d > 0 {
		// The connection's reader goes on (and closes the connection if
		// the client sends anything else); one timer per failed
		// connection is all a guessing client costs meanwhile.
		time.AfterFunc(d, finish)
		return
	}
	finish()
}

// saslAdmits says whether a request may be served on this connection
// before (or after) its authentication; if not, it counts and logs why the
// connection is closed.
func (c *conn) saslAdmits(key int16, clientID string) bool {
	if c.sasl == nil {
		return true
	}
	why := c.sasl.s.Admit(key, c.b.opts.AuthClock())
	if why == sasl.Serve {
		return true
	}
	remote := c.nc.RemoteAddr().String()
	apiName := kmsg.NameForKey(key)
	switch why {
	case sasl.Expired:
		// KIP-368: the client did not re-authenticate within
		// connections.max.reauth.ms; it reconnects and logs in anew.
		c.b.metrics.SASLAuthentication(c.listener, c.sasl.mechanism, "expired")
		c.b.logger(loggerConnection).Info("closing connection: SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate",
			"listener", c.listener, "remote", remote, "api", apiName, "principal", c.principal.String(), "client", clientID)
	case sasl.DuringReauth:
		c.b.metrics.SASLAuthentication(c.listener, c.sasl.mechanism, "reauthentication_failure")
		c.b.logger(loggerConnection).Info("closing connection: request during SASL re-authentication",
			"listener", c.listener, "remote", remote, "api", apiName, "client", clientID)
	default:
		// Kafka closes a connection that sends anything but ApiVersions
		// and the SASL exchange before it authenticated.
		c.b.metrics.SASLAuthentication(c.listener, "none", "unauthenticated_request")
		c.b.logger(loggerConnection).Info("closing connection: request before SASL authentication", "listener", c.listener,
			"remote", remote, "api", apiName, "client", clientID)
	}
	return false
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
	c.sasl.Authenticate(0, token, func(code int16, _ string, reply []byte, _ time.Duration) {
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
