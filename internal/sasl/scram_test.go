package sasl

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// users builds a lookup holding one credential per (mechanism, user).
func scramUsers(t *testing.T, mech string, iterations int32, salt []byte, passwords map[string]string) ScramLookup {
	t.Helper()
	creds := map[string]ScramCredential{}
	for user, pw := range passwords {
		salted, err := SaltedPassword(mech, []byte(pw), salt, int(iterations))
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewScramCredential(mech, salt, salted, iterations)
		if err != nil {
			t.Fatal(err)
		}
		creds[user] = c
	}
	return func(m, user string) (ScramCredential, bool) {
		c, ok := creds[user]
		return c, ok && m == mech
	}
}

// TestScramSHA256RFC7677 replays RFC 7677 §3's exchange byte for byte.
func TestScramSHA256RFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	s := NewSession([]string{MechanismScramSHA256}, nil,
		scramUsers(t, MechanismScramSHA256, 4096, salt, map[string]string{"user": "pencil"}))
	s.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	if _, o := s.Handshake(1, MechanismScramSHA256); o.Code != 0 {
		t.Fatalf("handshake: %+v", o)
	}
	o := s.Authenticate([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"), 1, t0)
	want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	if o.Code != 0 || string(o.Token) != want {
		t.Fatalf("server-first: %+v %q", o, o.Token)
	}
	if _, ok := s.Authenticated(); ok || s.Admit(3, t0) == Serve {
		t.Fatal("authenticated before the proof")
	}
	o = s.Authenticate([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="), 1, t0)
	if o.Code != 0 || string(o.Token) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server-final: %+v %q", o, o.Token)
	}
	if user, ok := s.Authenticated(); !ok || user != "user" || s.Admit(3, t0) != Serve {
		t.Fatalf("after proof: %q %v", user, ok)
	}
}

// scramClient is a minimal RFC 5802 client for the round trips.
func scramClient(t *testing.T, s *Session, mech, user, password string) (Outcome, string) {
	return scramClientPrefixed(t, s, mech, user, password, "")
}

// scramClientPrefixed puts prefix in front of the combined nonce of its
// final message, as librdkafka does with its own nonce.
func scramClientPrefixed(t *testing.T, s *Session, mech, user, password, prefix string) (Outcome, string) {
	t.Helper()
	h, _ := scramHash(mech)
	cnonce := "fyko+d2lbbFgONRv9qkxdawL"
	bare := "n=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(user) + ",r=" + cnonce
	o := s.Authenticate([]byte("n,,"+bare), 1, t0)
	if o.Code != 0 {
		return o, ""
	}
	serverFirst := string(o.Token)
	attrs, err := scramAttrs(serverFirst)
	if err != nil || len(attrs) != 3 || !strings.HasPrefix(attrs[0].v, cnonce) {
		t.Fatalf("server-first %q: %v", serverFirst, err)
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs[1].v)
	var iters int
	for _, c := range attrs[2].v {
		iters = iters*10 + int(c-'0')
	}
	salted, _ := SaltedPassword(mech, []byte(password), salt, iters)
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	withoutProof := "c=biws,r=" + prefix + attrs[0].v
	auth := bare + "," + serverFirst + "," + withoutProof
	sig := hmacOf(h, hashOf(h, clientKey), []byte(auth))
	proof := make([]byte, len(sig))
	subtle.XORBytes(proof, clientKey, sig)
	o = s.Authenticate([]byte(withoutProof+",p="+base64.StdEncoding.EncodeToString(proof)), 1, t0)
	if o.Code == 0 {
		want := "v=" + base64.StdEncoding.EncodeToString(hmacOf(h, hmacOf(h, salted, []byte("Server Key")), []byte(auth)))
		if !hmac.Equal(o.Token, []byte(want)) {
			t.Fatalf("server signature %q, want %q", o.Token, want)
		}
	}
	return o, serverFirst
}

func TestScramSHA512RoundTrip(t *testing.T) {
	lookup := scramUsers(t, MechanismScramSHA512, 8192, []byte("0123456789abcdef"),
		map[string]string{"bob,=x": "s3cret", "carol": "pw"})
	newSession := func() *Session {
		s := NewSession([]string{MechanismScramSHA512, MechanismPlain}, nil, lookup)
		if _, o := s.Handshake(1, MechanismScramSHA512); o.Code != 0 {
			t.Fatalf("handshake: %+v", o)
		}
		return s
	}
	s := newSession()
	if o, _ := scramClient(t, s, MechanismScramSHA512, "bob,=x", "s3cret"); o.Code != 0 {
		t.Fatalf("good password: %+v", o)
	}
	if user, ok := s.Authenticated(); !ok || user != "bob,=x" {
		t.Fatalf("escaped user name: %q %v", user, ok)
	}

	s = newSession()
	if o, _ := scramClientPrefixed(t, s, MechanismScramSHA512, "carol", "pw", "fyko+d2lbbFgONRv9qkxdawL"); o.Code != 0 {
		t.Fatalf("librdkafka's final nonce (its own nonce again in front): %+v", o)
	}
	s = newSession()
	wrong, _ := scramClient(t, s, MechanismScramSHA512, "carol", "nope")
	s = newSession()
	unknown, unknownFirst := scramClient(t, s, MechanismScramSHA512, "mallory", "pw")
	for name, o := range map[string]Outcome{"wrong password": wrong, "unknown user": unknown} {
		if o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close || !o.Delay {
			t.Fatalf("%s: %+v", name, o)
		}
	}
	if wrong.Message != unknown.Message {
		t.Fatalf("an unknown user is told apart from a wrong password: %q vs %q", unknown.Message, wrong.Message)
	}
	if !strings.HasSuffix(unknownFirst, ",i=4096") {
		t.Fatalf("unknown user's server-first %q", unknownFirst)
	}
	s = newSession()
	_, again := scramClient(t, s, MechanismScramSHA512, "mallory", "pw")
	salt := func(first string) string { return strings.Split(first, ",")[1] }
	if salt(again) != salt(unknownFirst) {
		t.Fatalf("an unknown user's salt changes between attempts: %q, %q", unknownFirst, again)
	}
	// A SHA-256 login cannot use the SHA-512 credential.
	s = NewSession([]string{MechanismScramSHA256}, nil, lookup)
	s.Handshake(1, MechanismScramSHA256)
	if o, _ := scramClient(t, s, MechanismScramSHA256, "carol", "pw"); o.Code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("other mechanism: %+v", o)
	}
}

func TestScramMalformed(t *testing.T) {
	lookup := scramUsers(t, MechanismScramSHA256, 4096, []byte("salt"), map[string]string{"u": "p"})
	for name, msg := range map[string]string{
		"channel binding": "p=tls-unique,,n=u,r=abc",
		"no gs2":          "n=u,r=abc",
		"bad escape":      "n,,n=a=2Xb,r=abc",
		"other authzid":   "n,a=admin,n=u,r=abc",
		"missing nonce":   "n,,n=u",
		"empty nonce":     "n,,n=u,r=",
		"mandatory ext":   "n,,n=u,r=abc,m=x",
		"garbage":         "\x00\x01",
	} {
		s := NewSession([]string{MechanismScramSHA256}, nil, lookup)
		s.Handshake(1, MechanismScramSHA256)
		if o := s.Authenticate([]byte(msg), 1, t0); o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close {
			t.Errorf("%s: %+v", name, o)
		}
	}
	for name, final := range map[string]string{
		"nonce mismatch": "c=biws,r=other,p=AAAA",
		"bad binding":    "c=eXk=,r=abcN,p=AAAA",
		"proof not b64":  "c=biws,r=abcN,p=!!",
		"no proof":       "c=biws,r=abcN",
		"short proof":    "c=biws,r=abcN,p=AAAA",
	} {
		s := NewSession([]string{MechanismScramSHA256}, nil, lookup)
		s.nonce = func() string { return "N" }
		s.Handshake(1, MechanismScramSHA256)
		if o := s.Authenticate([]byte("n,,n=u,r=abc"), 1, t0); o.Code != 0 {
			t.Fatalf("first: %+v", o)
		}
		if o := s.Authenticate([]byte(final), 1, t0); o.Code != kerr.SaslAuthenticationFailed.Code || !o.Close {
			t.Errorf("%s: %+v", name, o)
		}
		if _, ok := s.Authenticated(); ok {
			t.Errorf("%s: authenticated", name)
		}
	}
}
