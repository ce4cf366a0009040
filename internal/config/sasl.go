package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// MaxReauth is connections.max.reauth.ms per enabled mechanism
	// (KIP-368; 0: sessions do not expire).
	MaxReauth map[string]time.Duration
}

// reauthProperty is KIP-368's session lifetime, which Kafka lets a
// listener, or a listener and mechanism, set for itself.
const reauthProperty = "connections.max.reauth.ms"

// resolveReauth reads connections.max.reauth.ms and its
// listener.name.NAME[.MECHANISM]. forms: for each SASL listener and
// enabled mechanism the most specific value set.
func (b *Broker) resolveReauth(r *reader, scoped map[string]string, mechanisms []string) (map[string]map[string]time.Duration, error) {
	// byListener[NAME][mechanism or ""] is an explicit value.
	byListener := map[string]map[string]time.Duration{}
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		name, prop, _ := listenerScoped(key)
		mechanism, isReauth := strings.CutSuffix(prop, reauthProperty)
		if !isReauth {
			continue
		}
		value := scoped[key]
		if reason, ok := theRegistry().byName[reauthProperty].Validate(value); !ok {
			return nil, &Error{Key: key, Value: value, Reason: reason, Origin: b.origins[key]}
		}
		if err := b.checkScopedListener(key, value, name, "SASL", UsesSASL); err != nil {
			return nil, err
		}
		mechanism = strings.ToUpper(strings.TrimSuffix(mechanism, "."))
		if mechanism != "" && !slices.Contains(mechanisms, mechanism) {
			return nil, &Error{Key: key, Value: value, Origin: b.origins[key],
				Reason: fmt.Sprintf("a mechanism of sasl.enabled.mechanisms (%s), in lower case", strings.Join(mechanisms, ","))}
		}
		ms, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64) // validated above
		if byListener[name] == nil {
			byListener[name] = map[string]time.Duration{}
		}
		byListener[name][mechanism] = time.Duration(ms) * time.Millisecond
	}
	global := r.durationMs(reauthProperty)
	out := map[string]map[string]time.Duration{}
	for _, l := range b.Listeners {
		if !UsesSASL(l.SecurityProtocol) {
			continue
		}
		own := byListener[l.Name]
		perMechanism := map[string]time.Duration{}
		for _, m := range mechanisms {
			d, ok := own[m]
			if !ok {
				if d, ok = own[""]; !ok {
					d = global
				}
			}
			perMechanism[m] = d
		}
		out[l.Name] = perMechanism
	}
	return out, nil
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
	reauth, err := b.resolveReauth(r, scoped, mechanisms)
	if err != nil {
		return err
	}
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
			b.ListenerSASL[l.Name] = ListenerSASL{Mechanisms: mechanisms, MaxReauth: reauth[l.Name]}
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
			LoginUser: j.Options["username"], LoginPassword: j.Options["password"], MaxReauth: reauth[l.Name]}
	}
	return nil
}

// SASLOf returns a listener's SASL configuration; ok is false for a
// listener without SASL.
func (b *Broker) SASLOf(listener string) (ListenerSASL, bool) {
	s, ok := b.ListenerSASL[strings.ToUpper(listener)]
	return s, ok
}
