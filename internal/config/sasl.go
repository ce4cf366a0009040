package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/sasl"
)

// plainJAASScoped is the listener-scoped JAAS property of PLAIN, as Kafka
// names it: listener.name.NAME.plain.sasl.jaas.config.
const plainJAASScoped = "plain.sasl.jaas.config"

// ListenerSASL is the effective SASL configuration of one SASL listener.
type ListenerSASL struct {
	Mechanisms []string // sasl.enabled.mechanisms
	// PlainUsers are PLAIN's user_NAME="password" entries (secrets).
	PlainUsers map[string]string
	// LoginUser and LoginPassword are the JAAS entry's username and
	// password options (the password a secret): what this node logs in
	// with when it dials the listener on another node.
	LoginUser, LoginPassword string
}

// resolveSASL fills ListenerSASL for every SASL listener from its own
// listener.name.NAME.plain.sasl.jaas.config, else sasl.jaas.config.
func (b *Broker) resolveSASL(r *reader, scoped map[string]string) error {
	b.FailedAuthenticationDelay = r.durationMs("connection.failed.authentication.delay.ms")
	own := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		value := scoped[key]
		name, prop, _ := listenerScoped(key)
		if prop != plainJAASScoped {
			continue
		}
		if err := b.checkScopedListener(key, value, name, "SASL", UsesSASL); err != nil {
			return err
		}
		own[name] = key
	}
	b.ListenerSASL = map[string]ListenerSASL{}
	mechanisms := r.list("sasl.enabled.mechanisms")
	for _, l := range b.Listeners {
		if !UsesSASL(l.SecurityProtocol) {
			continue
		}
		key := "sasl.jaas.config"
		text := r.text(key)
		if k, ok := own[l.Name]; ok {
			key, text = k, strings.TrimSpace(scoped[k])
		}
		fail := func(reason string) error {
			return &Error{Key: key, Value: text, Reason: reason, Origin: b.origins[key]}
		}
		if text == "" && !slices.Contains(mechanisms, sasl.MechanismPlain) {
			// SCRAM users live in the metadata, not in the JAAS config.
			b.ListenerSASL[l.Name] = ListenerSASL{Mechanisms: mechanisms}
			continue
		}
		if text == "" {
			return fail(fmt.Sprintf("set (or listener.name.%s.%s) for %s listener %s: it lists the PLAIN users",
				strings.ToLower(l.Name), plainJAASScoped, l.SecurityProtocol, l.Name))
		}
		j, err := sasl.ParseJAAS(text)
		if err != nil {
			return fail(err.Error())
		}
		users, err := j.PlainUsers()
		if err != nil {
			return fail(err.Error())
		}
		if len(users) == 0 && slices.Contains(mechanisms, sasl.MechanismPlain) {
			return fail(`a PlainLoginModule entry with at least one user_NAME="password" option`)
		}
		b.ListenerSASL[l.Name] = ListenerSASL{Mechanisms: mechanisms, PlainUsers: users,
			LoginUser: j.Options["username"], LoginPassword: j.Options["password"]}
	}
	return nil
}

// SASLOf returns a listener's SASL configuration; ok is false for a
// listener without SASL.
func (b *Broker) SASLOf(listener string) (ListenerSASL, bool) {
	s, ok := b.ListenerSASL[strings.ToUpper(listener)]
	return s, ok
}
