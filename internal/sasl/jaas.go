// Package sasl holds the pure parts of SASL authentication: the JAAS
// configuration Kafka reads users from, the mechanisms' exchanges, and the
// state machine of one connection's authentication. No clock, no lock, no
// I/O: the connection that holds a Session applies what it returns.
package sasl

import (
	"fmt"
	"strings"
)

// JAAS is one parsed login module entry:
// `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="..." user_alice="...";`
type JAAS struct {
	LoginModule string
	Flag        string // required, requisite, sufficient, optional
	Options     map[string]string
}

// PlainLoginModule is the class Kafka's PLAIN mechanism reads users from.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ScramLoginModule is the class of Kafka's SCRAM client logins.
const ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// LoginModuleOf is the JAAS login module a client logging in with the
// mechanism is configured with.
func LoginModuleOf(mechanism string) string {
	switch mechanism {
	case MechanismPlain:
		return PlainLoginModule
	case MechanismOAuthBearer:
		return OAuthBearerLoginModule
	}
	return ScramLoginModule
}

// ParseJAAS parses Kafka's sasl.jaas.config value: one login module, its
// control flag, then name=value options (values quoted with ", with \" and
// \\ escapes, or bare words), ending with ';'. Error messages never quote
// option values, which hold passwords.
func ParseJAAS(s string) (JAAS, error) {
	p := &jaasParser{s: s}
	var j JAAS
	j.LoginModule = p.word()
	if j.LoginModule == "" {
		return JAAS{}, fmt.Errorf("sasl.jaas.config: expected a login module class name")
	}
	j.Flag = p.word()
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("sasl.jaas.config: expected a control flag (required, requisite, sufficient, optional) after %s", j.LoginModule)
	}
	j.Options = map[string]string{}
	for {
		p.space()
		if p.eof() {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: missing ';' at the end")
		}
		if p.peek() == ';' {
			p.i++
			p.space()
			if !p.eof() {
				return JAAS{}, fmt.Errorf("sasl.jaas.config: one login module only (text after ';' at byte %d)", p.i)
			}
			return j, nil
		}
		name := p.word()
		if name == "" {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: expected an option name at byte %d", p.i)
		}
		p.space()
		if p.eof() || p.peek() != '=' {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: option %s: expected '='", name)
		}
		p.i++
		p.space()
		value, err := p.value()
		if err != nil {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: option %s: %w", name, err)
		}
		if _, dup := j.Options[name]; dup {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: option %s appears twice", name)
		}
		j.Options[name] = value
	}
}

// PlainUsers returns the user_NAME="password" options of a
// PlainLoginModule entry, by user name.
func (j JAAS) PlainUsers() (map[string]string, error) {
	if j.LoginModule != PlainLoginModule {
		return nil, fmt.Errorf("sasl.jaas.config: PLAIN needs %s, not %s", PlainLoginModule, j.LoginModule)
	}
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users, nil
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) eof() bool  { return p.i >= len(p.s) }
func (p *jaasParser) peek() byte { return p.s[p.i] }

func (p *jaasParser) space() {
	for !p.eof() && strings.IndexByte(" \t\r\n", p.peek()) >= 0 {
		p.i++
	}
}

// word reads a run of characters that are not space, '=', ';' or '"'.
func (p *jaasParser) word() string {
	p.space()
	start := p.i
	for !p.eof() && strings.IndexByte(" \t\r\n=;\"", p.peek()) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *jaasParser) value() (string, error) {
	if p.eof() {
		return "", fmt.Errorf("expected a value")
	}
	if p.peek() != '"' {
		w := p.word()
		if w == "" {
			return "", fmt.Errorf("expected a value")
		}
		return w, nil
	}
	p.i++
	var b strings.Builder
	for !p.eof() {
		c := p.peek()
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if p.eof() {
				return "", fmt.Errorf("unterminated quoted value")
			}
			b.WriteByte(p.peek())
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated quoted value")
}
