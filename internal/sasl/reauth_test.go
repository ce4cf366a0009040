package sasl

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// t0 is the time the tests' exchanges happen at; sessions read no clock.
var t0 = time.Unix(1_700_000_000, 0)

const (
	keyProduce  = 0
	keyMetadata = 3
)

// loggedIn returns a PLAIN session authenticated at t0 with SaslAuthenticate
// of the given version, whose logins last lifetime.
func loggedIn(t *testing.T, version int16, lifetime time.Duration) *Session {
	t.Helper()
	s := NewSession([]string{MechanismPlain, MechanismScramSHA512}, map[string]string{"alice": "alice-pw", "bob": "bob-pw"}, nil)
	s.LimitLifetime(map[string]time.Duration{MechanismPlain: lifetime})
	if _, o := s.Handshake(1, MechanismPlain); o.Code != 0 {
		t.Fatalf("handshake: %+v", o)
	}
	o := s.Authenticate(plainToken("", "alice", "alice-pw"), version, t0)
	if o.Code != 0 || o.SessionLifetime != lifetime {
		t.Fatalf("login: %+v, want lifetime %v", o, lifetime)
	}
	return s
}

func TestSessionExpiry(t *testing.T) {
	s := loggedIn(t, 1, time.Minute)
	if a := s.Admit(keyProduce, t0.Add(time.Minute-time.Millisecond)); a != Serve {
		t.Fatalf("within the lifetime: %v", a)
	}
	for _, key := range []int16{keyProduce, keyMetadata, keyApiVersions, keySaslAuthenticate} {
		if a := s.Admit(key, t0.Add(time.Minute)); a != Expired {
			t.Errorf("key %d at the end of the lifetime: %v, want Expired", key, a)
		}
	}
	if a := s.Admit(keySaslHandshake, t0.Add(time.Hour)); a != Serve {
		t.Fatalf("a re-authentication's handshake after expiry: %v", a)
	}

	never := loggedIn(t, 1, 0)
	if a := never.Admit(keyProduce, t0.Add(100*365*24*time.Hour)); a != Serve || never.Expired(t0.Add(time.Hour)) {
		t.Fatalf("without connections.max.reauth.ms a login never expires: %v", a)
	}
}

func TestReauthentication(t *testing.T) {
	s := loggedIn(t, 1, time.Minute)
	later := t0.Add(2 * time.Minute) // expired: re-authentication is still served
	if _, o := s.Handshake(1, MechanismPlain); o.Code != 0 || !s.Reauthenticating() {
		t.Fatalf("re-authentication handshake: %+v", o)
	}
	if _, ok := s.Authenticated(); ok {
		t.Fatal("authenticated while re-authenticating")
	}
	if a := s.Admit(keyProduce, later); a != DuringReauth {
		t.Fatalf("produce during re-authentication: %v", a)
	}
	if a := s.Admit(keySaslAuthenticate, later); a != Serve {
		t.Fatalf("SaslAuthenticate during re-authentication: %v", a)
	}
	o := s.Authenticate(plainToken("", "alice", "alice-pw"), 2, later)
	if o.Code != 0 || o.SessionLifetime != time.Minute || s.Reauthenticating() {
		t.Fatalf("re-authentication: %+v", o)
	}
	if a := s.Admit(keyProduce, later.Add(time.Minute-time.Millisecond)); a != Serve {
		t.Fatalf("a new lifetime from the re-authentication: %v", a)
	}
	if a := s.Admit(keyProduce, later.Add(time.Minute)); a != Expired {
		t.Fatalf("the new lifetime ends too: %v", a)
	}
}

func TestReauthenticationRefusals(t *testing.T) {
	t.Run("another user", func(t *testing.T) {
		s := loggedIn(t, 1, time.Minute)
		s.Handshake(1, MechanismPlain)
		o := s.Authenticate(plainToken("", "bob", "bob-pw"), 1, t0)
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close || o.Message != "Cannot change principals during re-authentication from User.alice: User.bob" {
			t.Fatalf("%+v", o)
		}
		if a := s.Admit(keyProduce, t0); a != Unauthenticated {
			t.Fatalf("after a refused re-authentication: %v", a)
		}
	})
	t.Run("another mechanism", func(t *testing.T) {
		s := loggedIn(t, 1, time.Minute)
		if _, o := s.Handshake(1, MechanismScramSHA512); o.Code != 0 {
			t.Fatalf("Kafka answers the handshake: %+v", o)
		}
		o := s.Authenticate([]byte("n,,n=alice,r=abc"), 1, t0)
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close || o.Delay {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		s := loggedIn(t, 1, time.Minute)
		s.Handshake(1, MechanismPlain)
		o := s.Authenticate(plainToken("", "alice", "stale"), 1, t0)
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close || !o.Delay {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		s := loggedIn(t, 1, time.Minute)
		if _, o := s.Handshake(1, "GSSAPI"); o.Code != kerr.UnsupportedSaslMechanism.Code || !o.Close {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("client without SaslAuthenticate v1", func(t *testing.T) {
		// It never learnt the lifetime, so Kafka does not take its
		// handshake for a re-authentication; the connection goes on
		// until the lifetime ends.
		s := loggedIn(t, 0, time.Minute)
		if _, o := s.Handshake(1, MechanismPlain); o.Code != kerr.IllegalSaslState.Code || o.Close || s.Reauthenticating() {
			t.Fatalf("%+v", o)
		}
		if a := s.Admit(keyProduce, t0); a != Serve {
			t.Fatalf("%v", a)
		}
		if a := s.Admit(keyProduce, t0.Add(time.Minute)); a != Expired {
			t.Fatalf("%v", a)
		}
	})
	t.Run("handshake v0", func(t *testing.T) {
		s := loggedIn(t, 1, time.Minute)
		if _, o := s.Handshake(0, MechanismPlain); o.Code != kerr.IllegalSaslState.Code || s.RawToken() {
			t.Fatalf("%+v", o)
		}
	})
}

func TestScramReauthentication(t *testing.T) {
	salt := []byte("0123456789abcdef")
	s := NewSession([]string{MechanismScramSHA512}, nil,
		scramUsers(t, MechanismScramSHA512, 4096, salt, map[string]string{"carol": "carol-pw"}))
	s.LimitLifetime(map[string]time.Duration{MechanismScramSHA512: 30 * time.Second})
	s.Handshake(1, MechanismScramSHA512)
	if o, _ := scramClient(t, s, MechanismScramSHA512, "carol", "carol-pw"); o.Code != 0 || o.SessionLifetime != 30*time.Second {
		t.Fatalf("login: %+v", o)
	}
	s.Handshake(1, MechanismScramSHA512)
	// The server-first message of a longer exchange carries no lifetime.
	if o, _ := scramClient(t, s, MechanismScramSHA512, "carol", "carol-pw"); o.Code != 0 || o.SessionLifetime != 30*time.Second {
		t.Fatalf("re-authentication: %+v", o)
	}
	if user, ok := s.Authenticated(); !ok || user != "carol" || s.Reauthenticating() {
		t.Fatalf("after re-authentication: %q %v", user, ok)
	}
	// The password changed meanwhile: the re-authentication fails.
	s.Handshake(1, MechanismScramSHA512)
	if o, _ := scramClient(t, s, MechanismScramSHA512, "carol", "old-pw"); o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close {
		t.Fatalf("stale password: %+v", o)
	}
}
