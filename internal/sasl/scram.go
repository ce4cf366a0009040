package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM mechanisms (RFC 5802, RFC 7677), as Kafka names them.
const (
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Iteration bounds Kafka enforces on SCRAM credentials: fewer is weak, more
// lets one login cost a broker too much work.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// ScramCredential is what a server stores for one user and mechanism: the
// password itself is never kept (RFC 5802 §3).
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramLookup finds a user's credential for a mechanism in the current
// metadata; ok is false for an unknown user.
type ScramLookup func(mechanism, user string) (ScramCredential, bool)

// IsScram reports whether mechanism is one of the SCRAM mechanisms.
func IsScram(mechanism string) bool {
	return mechanism == MechanismScramSHA256 || mechanism == MechanismScramSHA512
}

func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case MechanismScramSHA256:
		return sha256.New, nil
	case MechanismScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unsupported SCRAM mechanism %q", mechanism)
}

// SaltedPassword is RFC 5802's Hi(Normalize(password), salt, i). Kafka
// does not apply SASLprep, so neither does Skein.
func SaltedPassword(mechanism string, password, salt []byte, iterations int) ([]byte, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return pbkdf2.Key(h, string(password), salt, iterations, h().Size())
}

// NewScramCredential derives the stored credential from a salted
// password: what AlterUserScramCredentials carries.
func NewScramCredential(mechanism string, salt, saltedPassword []byte, iterations int32) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := hmacOf(h, saltedPassword, []byte("Client Key"))
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  hashOf(h, clientKey),
		ServerKey:  hmacOf(h, saltedPassword, []byte("Server Key")),
		Iterations: iterations,
	}, nil
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

func hashOf(h func() hash.Hash, b []byte) []byte {
	x := h()
	x.Write(b)
	return x.Sum(nil)
}

// scramServer is the server side of one SCRAM exchange: two client
// messages, two answers.
type scramServer struct {
	mech   string
	h      func() hash.Hash
	lookup ScramLookup
	nonce  func() string

	user            string
	cred            ScramCredential
	known           bool
	clientFirstBare string
	serverFirst     string
	combinedNonce   string
	done            bool // the server-first message was sent
}

var errScramFailed = errors.New("authentication failed")

// first handles client-first-message and returns server-first-message.
func (s *scramServer) first(msg string) (string, error) {
	// gs2-header: no channel binding ("n") or a client that could bind but
	// thinks the server cannot ("y"); no authzid other than the user.
	gs2, rest, ok := cutN(msg, 2)
	if !ok || (gs2[0] != "n" && gs2[0] != "y") {
		return "", fmt.Errorf("invalid gs2 header: channel binding is not supported")
	}
	attrs, err := scramAttrs(rest)
	if err != nil {
		return "", err
	}
	if len(attrs) < 2 || attrs[0].k != 'n' || attrs[1].k != 'r' {
		return "", fmt.Errorf("client-first-message must start with n= and r=")
	}
	user, err := unescapeUser(attrs[0].v)
	if err != nil {
		return "", err
	}
	if gs2[1] != "" {
		az, ok := strings.CutPrefix(gs2[1], "a=")
		if !ok {
			return "", fmt.Errorf("invalid authzid")
		}
		if a, err := unescapeUser(az); err != nil || a != user {
			return "", fmt.Errorf("authorization id must be the user name")
		}
	}
	for _, a := range attrs[2:] {
		if a.k == 'm' {
			return "", fmt.Errorf("mandatory extension not supported")
		}
	}
	if attrs[1].v == "" {
		return "", fmt.Errorf("empty client nonce")
	}
	s.user = user
	s.cred, s.known = s.lookup(s.mech, user)
	if !s.known {
		// An unknown user is refused at the proof, with the same
		// message as a wrong password (Kafka refuses it one message
		// earlier, with the same error). The fake salt is keyed by a
		// secret of this process, so a client cannot compute it from
		// the name, and stays the same for repeated attempts.
		s.cred = ScramCredential{Salt: hmacOf(s.h, unknownUserKey, []byte(user))[:16], Iterations: MinScramIterations}
	}
	s.clientFirstBare = rest
	s.combinedNonce = attrs[1].v + s.nonce()
	s.serverFirst = "r=" + s.combinedNonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) +
		",i=" + strconv.Itoa(int(s.cred.Iterations))
	s.done = true
	return s.serverFirst, nil
}

// final handles client-final-message and returns server-final-message.
func (s *scramServer) final(msg string) (string, error) {
	attrs, err := scramAttrs(msg)
	if err != nil {
		return "", err
	}
	if len(attrs) < 3 || attrs[0].k != 'c' || attrs[1].k != 'r' || attrs[len(attrs)-1].k != 'p' {
		return "", fmt.Errorf("client-final-message must be c=,r=,...,p=")
	}
	// "biws" is base64("n,,"), "eSws" base64("y,,"): the gs2 header
	// without channel binding data, which is all Skein accepts.
	if attrs[0].v != "biws" && attrs[0].v != "eSws" {
		return "", fmt.Errorf("channel binding not supported")
	}
	// Kafka accepts a final nonce that ends with the one it sent, not
	// only one equal to it: librdkafka (2.0 at least) sends the client's
	// nonce again in front of the combined one, and its clients must work.
	if !strings.HasSuffix(attrs[1].v, s.combinedNonce) {
		return "", fmt.Errorf("nonce mismatch")
	}
	proof, err := base64.StdEncoding.DecodeString(attrs[len(attrs)-1].v)
	if err != nil {
		return "", fmt.Errorf("invalid proof encoding")
	}
	withoutProof := msg[:strings.LastIndex(msg, ",p=")]
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := hmacOf(s.h, s.cred.StoredKey, []byte(authMessage))
	if len(proof) != len(clientSig) || !s.known {
		return "", errScramFailed
	}
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, clientSig)
	if subtle.ConstantTimeCompare(hashOf(s.h, clientKey), s.cred.StoredKey) != 1 {
		return "", errScramFailed
	}
	return "v=" + base64.StdEncoding.EncodeToString(hmacOf(s.h, s.cred.ServerKey, []byte(authMessage))), nil
}

// cutN splits the first n comma-separated fields off msg.
func cutN(msg string, n int) ([]string, string, bool) {
	var out []string
	for range n {
		f, rest, ok := strings.Cut(msg, ",")
		if !ok {
			return nil, "", false
		}
		out = append(out, f)
		msg = rest
	}
	return out, msg, true
}

type scramAttr struct {
	k byte
	v string
}

func scramAttrs(msg string) ([]scramAttr, error) {
	var out []scramAttr
	for f := range strings.SplitSeq(msg, ",") {
		if len(f) < 2 || f[1] != '=' {
			return nil, fmt.Errorf("invalid SCRAM attribute %q", truncate(f))
		}
		out = append(out, scramAttr{k: f[0], v: f[2:]})
	}
	return out, nil
}

func truncate(s string) string {
	if len(s) > 16 {
		return s[:16] + "..."
	}
	return s
}

// unescapeUser undoes RFC 5802's saslname escaping: "=2C" is a comma,
// "=3D" an equals sign, any other "=" is invalid.
func unescapeUser(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("invalid escape in user name")
		}
		i += 2
	}
	return b.String(), nil
}

// unknownUserKey keys the fake salts of unknown users; drawn once per
// process.
var unknownUserKey = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// randomNonce is the server's part of the nonce: 24 random bytes, printable.
func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}
