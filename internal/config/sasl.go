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
	// LoginUser and LoginPassword are the username and password options
	// (the password a secret) of the JAAS entry of
	// sasl.mechanism.inter.broker.protocol: what this node logs in with
	// when it dials the listener on another node. LoginKey is the
	// property they are read from.
	LoginUser, LoginPassword, LoginKey string
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
	for _, l := range b.securedListeners() {
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

// resolveSASL fills ListenerSASL for every SASL listener: PLAIN's users
// from its own listener.name.NAME.plain.sasl.jaas.config, else
// sasl.jaas.config; the login nodes dial it with from the JAAS entry of
// sasl.mechanism.inter.broker.protocol (listener.name.NAME.MECHANISM.sasl.jaas.config,
// else sasl.jaas.config), as Kafka reads them.
func (b *Broker) resolveSASL(r *reader, scoped map[string]string) error {
	b.FailedAuthenticationDelay = r.durationMs("connection.failed.authentication.delay.ms")
	// own[NAME][property] is a listener's own JAAS key.
	own := map[string]map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		value := scoped[key]
		name, prop, _ := listenerScoped(key)
		if !slices.Contains(jaasScoped(), prop) {
			continue
		}
		if err := b.checkScopedListener(key, value, name, "SASL", UsesSASL); err != nil {
			return err
		}
		if own[name] == nil {
			own[name] = map[string]string{}
		}
		own[name][prop] = key
	}
	b.ListenerSASL = map[string]ListenerSASL{}
	mechanisms := r.list("sasl.enabled.mechanisms")
	reauth, err := b.resolveReauth(r, scoped, mechanisms)
	if err != nil {
		return err
	}
	if err := b.resolveOAuth(r, scoped, mechanisms); err != nil {
		return err
	}
	loginMechanism := r.text("sasl.mechanism.inter.broker.protocol")
	for _, l := range b.securedListeners() {
		if !UsesSASL(l.SecurityProtocol) {
			continue
		}
		// jaasOf is the JAAS entry a mechanism reads on this listener,
		// and the key it came from.
		jaasOf := func(mechanism string) (key, text string) {
			if k, ok := own[l.Name][jaasScopedOf(mechanism)]; ok {
				return k, strings.TrimSpace(scoped[k])
			}
			return "sasl.jaas.config", r.text("sasl.jaas.config")
		}
		set := ListenerSASL{Mechanisms: mechanisms, MaxReauth: reauth[l.Name]}
		if slices.Contains(mechanisms, sasl.MechanismPlain) {
			key, text := jaasOf(sasl.MechanismPlain)
			fail := func(reason string) error {
				return &Error{Key: key, Value: text, Reason: reason, Origin: b.origins[key]}
			}
			if text == "" {
				return fail(fmt.Sprintf("set (or listener.name.%s.%s) for %s listener %s: it lists the PLAIN users",
					strings.ToLower(l.Name), plainJAASScoped, l.SecurityProtocol, l.Name))
			}
			j, err := sasl.ParseJAAS(text)
			if err != nil {
				return fail(err.Error())
			}
			if set.PlainUsers, err = j.PlainUsers(); err != nil {
				return fail(err.Error())
			}
			if len(set.PlainUsers) == 0 {
				return fail(`a PlainLoginModule entry with at least one user_NAME="password" option`)
			}
		}
		if slices.Contains(mechanisms, sasl.MechanismOAuthBearer) {
			// Kafka's broker reads an OAuthBearerLoginModule entry here;
			// its options configure Kafka's unsecured validator, which
			// Skein does not offer, so only its form is checked.
			if key, ok := own[l.Name][jaasScopedOf(sasl.MechanismOAuthBearer)]; ok {
				text := strings.TrimSpace(scoped[key])
				j, err := sasl.ParseJAAS(text)
				if err == nil && j.LoginModule != sasl.OAuthBearerLoginModule {
					err = fmt.Errorf("an %s entry", sasl.OAuthBearerLoginModule)
				}
				if err != nil {
					return &Error{Key: key, Value: text, Reason: err.Error(), Origin: b.origins[key]}
				}
			}
		}
		// SCRAM users live in the metadata, not in the JAAS config: it
		// only holds the nodes' own login.
		set.LoginKey, _ = jaasOf(loginMechanism)
		if key, text := jaasOf(loginMechanism); text != "" {
			j, err := sasl.ParseJAAS(text)
			if err != nil {
				return &Error{Key: key, Value: text, Reason: err.Error(), Origin: b.origins[key]}
			}
			if j.LoginModule == sasl.LoginModuleOf(loginMechanism) {
				set.LoginUser, set.LoginPassword = j.Options["username"], j.Options["password"]
			}
		}
		b.ListenerSASL[l.Name] = set
	}
	return nil
}

// jaasScopedOf is the listener-scoped JAAS property of a mechanism, as
// Kafka names it: listener.name.NAME.MECHANISM.sasl.jaas.config, the
// mechanism in lower case.
func jaasScopedOf(mechanism string) string {
	return strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// jaasScoped are the listener-scoped JAAS properties of every mechanism.
func jaasScoped() []string {
	var out []string
	for _, m := range sasl.Mechanisms {
		out = append(out, jaasScopedOf(m))
	}
	return out
}

// SASLOf returns a listener's SASL configuration; ok is false for a
// listener without SASL.
func (b *Broker) SASLOf(listener string) (ListenerSASL, bool) {
	s, ok := b.ListenerSASL[strings.ToUpper(listener)]
	return s, ok
}
