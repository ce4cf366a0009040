package sasl

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MechanismPlain is RFC 4616's PLAIN: the password travels in the clear
// inside the connection, so it belongs on SASL_SSL listeners.
const MechanismPlain = "PLAIN"

// Mechanisms Skein can serve.
var Mechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer}

// API keys a connection may send before it has authenticated.
const (
	keySaslHandshake    = 17
	keyApiVersions      = 18
	keySaslAuthenticate = 36
)

type state int

const (
	awaitingHandshake state = iota
	awaitingAuthenticate
	authenticated
	failed
)

// Session is the authentication state of one connection on a SASL
// listener: which mechanism the client chose, where the exchange is, and
// who it authenticated as; and, with connections.max.reauth.ms (KIP-368),
// when that authentication expires and whether a re-authentication on
// the same connection is under way. It is driven by the connection's
// reader only and reads no clock: every call that depends on the time is
// given it.
type Session struct {
	enabled []string
	users   map[string]string // PLAIN: user name -> password
	scram   ScramLookup
	oauth   OAuthLookup
	// oauthRefusal is why the last OAUTHBEARER token was refused, once
	// the error challenge was sent and the client's %x01 is awaited.
	oauthRefusal string
	// nonce makes the server's part of a SCRAM nonce; tests fix it.
	nonce func() string
	ss    *scramServer
	state state
	mech  string
	user  string
	// raw is set by a v0 SaslHandshake: the exchange then travels as bare
	// size-prefixed tokens, without Kafka request headers.
	raw bool

	// maxLifetime is connections.max.reauth.ms per mechanism (absent or
	// 0: sessions do not expire).
	maxLifetime map[string]time.Duration
	// expires is when the current authentication ends (zero: never).
	expires time.Time
	// canReauth is set once the client sent SaslAuthenticate v1 or
	// later, as Kafka decides it: only such a client knows the session
	// lifetime and may re-authenticate.
	canReauth bool
	// reauth is set from a re-authentication's SaslHandshake until its
	// exchange ends; prevMech and prevUser are what it must keep.
	reauth             bool
	prevMech, prevUser string
}

// NewSession starts the authentication of a new connection.
// scram finds SCRAM credentials (nil: no SCRAM user exists).
func NewSession(enabled []string, plainUsers map[string]string, scram ScramLookup) *Session {
	if scram == nil {
		scram = func(string, string) (ScramCredential, bool) { return ScramCredential{}, false }
	}
	noOAuth := func() OAuthValidator { return OAuthValidator{} }
	return &Session{enabled: enabled, users: plainUsers, scram: scram, oauth: noOAuth, nonce: randomNonce}
}

// ValidateOAuth sets what OAUTHBEARER tokens are validated with.
func (s *Session) ValidateOAuth(lookup OAuthLookup) {
	s.oauth = lookup
}

// LimitLifetime sets connections.max.reauth.ms per mechanism: an
// authentication with a mechanism listed with a positive duration lasts
// that long, after which the client must re-authenticate before anything
// else (KIP-368).
func (s *Session) LimitLifetime(perMechanism map[string]time.Duration) {
	s.maxLifetime = perMechanism
}

// Admission is whether a request may be served, and if not why the
// connection is closed.
type Admission int

const (
	// Serve the request.
	Serve Admission = iota
	// Unauthenticated: a request other than ApiVersions or the SASL
	// exchange before authenticating (or after a failure).
	Unauthenticated
	// Expired: the session lifetime passed and the request does not
	// start a re-authentication; KIP-368 closes the connection.
	Expired
	// DuringReauth: a request other than SaslAuthenticate between a
	// re-authentication's SaslHandshake and the end of its exchange.
	DuringReauth
)

// Admit decides whether a request with this API key, arriving at now,
// may be served. Before authentication only ApiVersions and the SASL
// exchange are, as in Kafka, which closes a connection sending anything
// else. Once the session expired only a SaslHandshake, which starts a
// re-authentication, is; during one only its SaslAuthenticate requests.
func (s *Session) Admit(key int16, now time.Time) Admission {
	switch {
	case s.state == failed:
		return Unauthenticated
	case s.reauth:
		if key == keySaslAuthenticate {
			return Serve
		}
		return DuringReauth
	case s.state == authenticated:
		if s.Expired(now) && key != keySaslHandshake {
			return Expired
		}
		return Serve
	case key == keyApiVersions || key == keySaslHandshake || key == keySaslAuthenticate:
		return Serve
	}
	return Unauthenticated
}

// Expired reports whether the current authentication's lifetime passed.
func (s *Session) Expired(now time.Time) bool {
	return !s.expires.IsZero() && !now.Before(s.expires)
}

// Reauthenticating reports whether a re-authentication is under way.
func (s *Session) Reauthenticating() bool { return s.reauth }

// Authenticated reports whether the exchange succeeded, and as whom.
func (s *Session) Authenticated() (user string, ok bool) {
	return s.user, s.state == authenticated
}

// Outcome is what the connection must answer and do.
type Outcome struct {
	Code    int16
	Message string // for SaslAuthenticate's error_message; never holds a secret
	// Reason is for the broker's log when it differs from Message (an
	// OAUTHBEARER client is told only invalid_token); never a secret.
	Reason string
	// RefreshKeys asks for the OAUTHBEARER key set to be fetched again
	// soon: a token named a key it does not hold (or none is loaded).
	RefreshKeys bool
	// Token is the server's reply in the exchange (empty for PLAIN).
	Token []byte
	// Delay asks the connection to hold the answer for
	// connection.failed.authentication.delay.ms (a failed password).
	Delay bool
	// Close asks the connection to close after the answer.
	Close bool
	// SessionLifetime is SaslAuthenticate's session_lifetime_ms (v1+)
	// once an exchange succeeded: 0 when the session does not expire.
	SessionLifetime time.Duration
}

// Handshake handles SaslHandshake: after v1 the exchange is carried in
// SaslAuthenticate requests, after v0 in bare tokens (RawToken). It
// returns the enabled mechanisms, which the answer always lists.
//
// On an authenticated connection a v1 SaslHandshake from a client that
// used SaslAuthenticate v1+ starts a re-authentication (KIP-368): the
// exchange runs again, must use the same mechanism and end with the same
// user. Requests read before it are still answered, in order, as the
// principal they were read under. From another client it is answered
// ILLEGAL_SASL_STATE and the connection goes on, as Kafka does.
func (s *Session) Handshake(version int16, mechanism string) ([]string, Outcome) {
	switch {
	case s.state == authenticated && (!s.canReauth || version < 1):
		return s.enabled, Outcome{Code: kerr.IllegalSaslState.Code,
			Message: "already authenticated; re-authentication needs SaslHandshake v1 after SaslAuthenticate v1 or later"}
	case s.state != awaitingHandshake && s.state != authenticated:
		return s.enabled, Outcome{Code: kerr.IllegalSaslState.Code, Close: true}
	}
	if !slices.Contains(s.enabled, mechanism) {
		// Kafka answers, then closes: the client must reconnect with
		// a mechanism the broker offers.
		s.state = failed
		s.reauth = false
		return s.enabled, Outcome{Code: kerr.UnsupportedSaslMechanism.Code, Close: true}
	}
	if s.state == authenticated {
		// Kafka answers the handshake and refuses a changed mechanism
		// at the exchange's first token.
		s.reauth, s.prevMech, s.prevUser = true, s.mech, s.user
	}
	s.mech = mechanism
	s.state = awaitingAuthenticate
	s.raw = version == 0
	return s.enabled, Outcome{}
}

// RawToken reports whether the next frame is a bare token of the
// exchange (after a v0 SaslHandshake), not a Kafka request.
func (s *Session) RawToken() bool { return s.raw && s.state == awaitingAuthenticate }

// Authenticate handles one token of the exchange, from SaslAuthenticate
// (version is the request's) or a bare frame (version 0). now is when it
// arrived: a successful exchange's session lasts from then.
func (s *Session) Authenticate(token []byte, version int16, now time.Time) Outcome {
	if s.state != awaitingAuthenticate {
		msg := "SaslAuthenticate not expected before SaslHandshake"
		if s.state == authenticated {
			msg = "already authenticated; a re-authentication starts with SaslHandshake"
		}
		return Outcome{Code: kerr.IllegalSaslState.Code, Message: msg, Close: true}
	}
	if version >= 1 {
		s.canReauth = true
	}
	if s.reauth && s.mech != s.prevMech {
		return s.fail(fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			s.mech, s.prevMech), false)
	}
	var o Outcome
	// credentialExpires is when the credential itself ends (an
	// OAUTHBEARER token's exp); zero for passwords.
	var credentialExpires time.Time
	switch s.mech {
	case MechanismPlain:
		user, ok := s.plain(token)
		if !ok {
			return s.fail("Authentication failed: Invalid username or password", true)
		}
		s.user = user
	case MechanismScramSHA256, MechanismScramSHA512:
		if o = s.scramStep(token); o.Code != 0 || s.ss != nil {
			return o // a failure, or the first of SCRAM's two steps
		}
	case MechanismOAuthBearer:
		if o, credentialExpires = s.oauthStep(token, now); o.Code != 0 || s.oauthRefusal != "" {
			return o // a failure, or the error challenge of a refused token
		}
	default:
		s.state = failed
		return Outcome{Code: kerr.IllegalSaslState.Code, Message: "no mechanism chosen", Close: true}
	}
	if s.reauth && s.user != s.prevUser {
		return s.fail(fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s", s.prevUser, s.user), false)
	}
	s.state = authenticated
	s.reauth = false
	s.expires = time.Time{}
	if d, bounded := sessionLifetime(s.maxLifetime[s.mech], credentialExpires, now); bounded {
		s.expires = now.Add(d)
		o.SessionLifetime = d
	}
	return o
}

// sessionLifetime is how long an authentication lasts, as Kafka computes
// it: connections.max.reauth.ms when positive, the credential's own
// remaining lifetime (a token's exp) when it has one, the shorter when
// both. A credential that is already past its end (it was accepted
// within the clock skew) still gets a lifetime of 1ms, not 0, which
// would tell the client the session never expires.
func sessionLifetime(maxReauth time.Duration, credentialExpires, now time.Time) (time.Duration, bool) {
	switch {
	case credentialExpires.IsZero() && maxReauth <= 0:
		return 0, false
	case credentialExpires.IsZero():
		return maxReauth, true
	}
	d := credentialExpires.Sub(now)
	if maxReauth > 0 && maxReauth < d {
		d = maxReauth
	}
	return max(d, time.Millisecond), true
}

// fail ends the exchange with SASL_AUTHENTICATION_FAILED; delay asks for
// connection.failed.authentication.delay.ms (a wrong secret).
func (s *Session) fail(message string, delay bool) Outcome {
	s.state = failed
	s.reauth = false
	s.ss = nil
	s.oauthRefusal = ""
	return Outcome{Code: kerr.SaslAuthenticationFailed.Code, Message: message, Delay: delay, Close: true}
}

// plain checks an RFC 4616 message: [authzid] NUL authcid NUL passwd. An
// authorization id other than the user name is refused, as Kafka does.
func (s *Session) plain(token []byte) (string, bool) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", false
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || (authz != "" && authz != user) {
		return "", false
	}
	want, known := s.users[user]
	if !known {
		// Compare anyway, so an unknown user costs what a known one does.
		subtle.ConstantTimeCompare(pass, pass)
		return "", false
	}
	if subtle.ConstantTimeCompare(pass, []byte(want)) != 1 {
		return "", false
	}
	return user, true
}

// scramStep serves one of SCRAM's two client messages. Every failure
// answers SASL_AUTHENTICATION_FAILED, as Kafka does, whether the user is
// unknown or the proof wrong.
func (s *Session) scramStep(token []byte) Outcome {
	fail := func(reason string) Outcome {
		during := "authentication"
		if s.reauth {
			during = "re-authentication"
		}
		return s.fail("Authentication failed during "+during+" due to invalid credentials with SASL mechanism "+
			s.mech+": "+reason, true)
	}
	if s.ss == nil {
		h, err := scramHash(s.mech)
		if err != nil {
			return fail(err.Error())
		}
		s.ss = &scramServer{mech: s.mech, h: h, lookup: s.scram, nonce: s.nonce}
		reply, err := s.ss.first(string(token))
		if err != nil {
			return fail(err.Error())
		}
		return Outcome{Token: []byte(reply)}
	}
	reply, err := s.ss.final(string(token))
	if err != nil {
		return fail(err.Error())
	}
	s.user = s.ss.user
	s.ss = nil
	return Outcome{Token: []byte(reply)}
}
