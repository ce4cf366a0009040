package sasl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func plainToken(authz, user, pass string) []byte {
	return []byte(authz + "\x00" + user + "\x00" + pass)
}

func TestPlainSession(t *testing.T) {
	users := map[string]string{"alice": "alice-pw"}
	s := NewSession([]string{MechanismPlain}, users, nil)
	if s.Admit(3, t0) == Serve || s.Admit(18, t0) != Serve || s.Admit(17, t0) != Serve || s.Admit(36, t0) != Serve {
		t.Fatal("before authentication only ApiVersions and SASL may be served")
	}
	if o := s.Authenticate(plainToken("", "alice", "alice-pw"), 1, t0); o.Code != kerr.IllegalSaslState.Code || !o.Close {
		t.Fatalf("authenticate before handshake: %+v", o)
	}
	s = NewSession([]string{MechanismPlain}, users, nil)
	if enabled, o := s.Handshake(1, MechanismPlain); o.Code != 0 || len(enabled) != 1 {
		t.Fatalf("handshake: %v %+v", enabled, o)
	}
	if _, o := s.Handshake(1, MechanismPlain); o.Code != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake: %+v", o)
	}
	if o := s.Authenticate(plainToken("", "alice", "alice-pw"), 1, t0); o.Code != 0 || o.Close {
		t.Fatalf("good password: %+v", o)
	}
	if user, ok := s.Authenticated(); !ok || user != "alice" || s.Admit(0, t0) != Serve {
		t.Fatalf("after success: %q %v", user, ok)
	}
	if o := s.Authenticate(plainToken("", "alice", "alice-pw"), 1, t0); o.Code != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate again: %+v", o)
	}
}

func TestPlainFailures(t *testing.T) {
	users := map[string]string{"alice": "alice-pw"}
	for name, token := range map[string][]byte{
		"wrong password":  plainToken("", "alice", "nope"),
		"unknown user":    plainToken("", "bob", "alice-pw"),
		"other authzid":   plainToken("admin", "alice", "alice-pw"),
		"no separators":   []byte("alice-pw"),
		"empty user":      plainToken("", "", ""),
		"password prefix": plainToken("", "alice", "alice-p"),
		"extra NUL":       []byte("\x00alice\x00alice-pw\x00"),
	} {
		s := NewSession([]string{MechanismPlain}, users, nil)
		s.Handshake(1, MechanismPlain)
		o := s.Authenticate(token, 1, t0)
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Delay || !o.Close {
			t.Errorf("%s: %+v", name, o)
		}
		if _, ok := s.Authenticated(); ok || s.Admit(18, t0) == Serve {
			t.Errorf("%s: the connection may still be used", name)
		}
	}
	s := NewSession([]string{MechanismPlain}, users, nil)
	if _, o := s.Handshake(1, "SCRAM-SHA-512"); o.Code != kerr.UnsupportedSaslMechanism.Code || !o.Close {
		t.Errorf("unknown mechanism: %+v", o)
	}
	s = NewSession([]string{MechanismPlain}, users, nil)
	s.Handshake(1, MechanismPlain)
	if o := s.Authenticate(plainToken("alice", "alice", "alice-pw"), 1, t0); o.Code != 0 {
		t.Errorf("authzid equal to the user: %+v", o)
	}
}

func TestPlainSessionV0(t *testing.T) {
	s := NewSession([]string{MechanismPlain}, map[string]string{"alice": "alice-pw"}, nil)
	if s.RawToken() {
		t.Fatal("a raw token expected before the handshake")
	}
	s.Handshake(0, MechanismPlain)
	if !s.RawToken() {
		t.Fatal("no raw token expected after a v0 handshake")
	}
	if o := s.Authenticate(plainToken("", "alice", "alice-pw"), 1, t0); o.Code != 0 || s.RawToken() {
		t.Fatalf("v0 exchange: %+v raw=%v", o, s.RawToken())
	}
}
