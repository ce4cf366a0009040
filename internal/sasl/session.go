package sasl

import (
	"bytes"
	"crypto/subtle"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MechanismPlain is RFC 4616's PLAIN: the password travels in the clear
// inside the connection, so it belongs on SASL_SSL listeners.
const MechanismPlain = "PLAIN"

// Mechanisms Skein can serve.
var Mechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}

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
// who it authenticated as. It is driven by the connection's reader only.
type Session struct {
	enabled []string
	users   map[string]string // PLAIN: user name -> password
	scram   ScramLookup
	// nonce makes the server's part of a SCRAM nonce; tests fix it.
	nonce func() string
	ss    *scramServer
	state state
	mech  string
	user  string
	// raw is set by a v0 SaslHandshake: the exchange then travels as bare
	// size-prefixed tokens, without Kafka request headers.
	raw bool
}

// NewSession starts the authentication of a new connection.
// scram finds SCRAM credentials (nil: no SCRAM user exists).
func NewSession(enabled []string, plainUsers map[string]string, scram ScramLookup) *Session {
	if scram == nil {
		scram = func(string, string) (ScramCredential, bool) { return ScramCredential{}, false }
	}
	return &Session{enabled: enabled, users: plainUsers, scram: scram, nonce: randomNonce}
}

// Allowed reports whether a request with this API key may be served now:
// before authentication only ApiVersions and the SASL exchange are, as in
// Kafka, which closes a connection sending anything else.
func (s *Session) Allowed(key int16) bool {
	if s.state == authenticated {
		return true
	}
	if s.state == failed {
		return false
	}
	return key == keyApiVersions || key == keySaslHandshake || key == keySaslAuthenticate
}

// Authenticated reports whether the exchange succeeded, and as whom.
func (s *Session) Authenticated() (user string, ok bool) {
	return s.user, s.state == authenticated
}

// Outcome is what the connection must answer and do.
type Outcome struct {
	Code    int16
	Message string // for SaslAuthenticate's error_message; never holds a secret
	// Token is the server's reply in the exchange (empty for PLAIN).
	Token []byte
	// Delay asks the connection to hold the answer for
	// connection.failed.authentication.delay.ms (a failed password).
	Delay bool
	// Close asks the connection to close after the answer.
	Close bool
}

// Handshake handles SaslHandshake: after v1 the exchange is carried in
// SaslAuthenticate requests, after v0 in bare tokens (RawToken). It
// returns the enabled mechanisms, which the answer always lists.
func (s *Session) Handshake(version int16, mechanism string) ([]string, Outcome) {
	if s.state != awaitingHandshake {
		return s.enabled, Outcome{Code: kerr.IllegalSaslState.Code, Close: true}
	}
	if !slices.Contains(s.enabled, mechanism) {
		// Kafka answers, then closes: the client must reconnect with
		// a mechanism the broker offers.
		s.state = failed
		return s.enabled, Outcome{Code: kerr.UnsupportedSaslMechanism.Code, Close: true}
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
// or a bare frame.
func (s *Session) Authenticate(token []byte) Outcome {
	if s.state != awaitingAuthenticate {
		msg := "SaslAuthenticate not expected before SaslHandshake"
		if s.state == authenticated {
			msg = "already authenticated; re-authentication (KIP-368) is not served"
		}
		return Outcome{Code: kerr.IllegalSaslState.Code, Message: msg, Close: true}
	}
	switch s.mech {
	case MechanismPlain:
		user, ok := s.plain(token)
		if !ok {
			s.state = failed
			return Outcome{Code: kerr.SaslAuthenticationFailed.Code,
				Message: "Authentication failed: Invalid username or password", Delay: true, Close: true}
		}
		s.user = user
		s.state = authenticated
		return Outcome{}
	case MechanismScramSHA256, MechanismScramSHA512:
		return s.scramStep(token)
	}
	s.state = failed
	return Outcome{Code: kerr.IllegalSaslState.Code, Message: "no mechanism chosen", Close: true}
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
		s.state = failed
		return Outcome{Code: kerr.SaslAuthenticationFailed.Code,
			Message: "Authentication failed during authentication due to invalid credentials with SASL mechanism " +
				s.mech + ": " + reason, Delay: true, Close: true}
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
	s.state = authenticated
	return Outcome{Token: []byte(reply)}
}
