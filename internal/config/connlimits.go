package config

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// listenerScopedProperties may also be set for one listener as
// listener.name.NAME.PROPERTY (Kafka's listener prefix); the value is
// checked like the broker-wide property's.
var listenerScopedProperties = []string{"max.connections", "max.connection.creation.rate"}

// listenerScoped splits listener.name.NAME.PROPERTY; ok is false for any
// other key.
func listenerScoped(key string) (listener, property string, ok bool) {
	rest, found := strings.CutPrefix(key, "listener.name.")
	if !found {
		return "", "", false
	}
	if head, found := strings.CutSuffix(rest, "."+reauthProperty); found {
		// Kafka's listener.name.NAME.MECHANISM.connections.max.reauth.ms
		// (the mechanism in lower case), or without the mechanism.
		name, mechanism, _ := strings.Cut(head, ".")
		if name != "" && !strings.Contains(mechanism, ".") {
			if mechanism == "" {
				return strings.ToUpper(name), reauthProperty, true
			}
			return strings.ToUpper(name), mechanism + "." + reauthProperty, true
		}
	}
	for _, p := range slices.Concat(listenerScopedProperties, sslListenerScoped(), jaasScoped(), []string{callbackHandlerScoped}) {
		if name, found := strings.CutSuffix(rest, "."+p); found && name != "" && !strings.Contains(name, ".") {
			return strings.ToUpper(name), p, true
		}
	}
	return "", "", false
}

// ParseConnectionOverrides reads max.connections.per.ip.overrides:
// ip:count pairs, IPv6 in brackets. Keys are in net.IP.String form, so an
// address matches however the connection's peer address is spelled.
func ParseConnectionOverrides(v string) (map[string]int, error) {
	items, err := splitList(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(items))
	for _, item := range items {
		i := strings.LastIndexByte(item, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not ip:count", item)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(item[:i], "["), "]")
		ip := net.ParseIP(host)
		if ip == nil {
			return nil, fmt.Errorf("%q is not an IP address (host names are not resolved)", host)
		}
		n, err := strconv.Atoi(item[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a non-negative integer", item)
		}
		key := ip.String()
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s appears twice", key)
		}
		out[key] = n
	}
	return out, nil
}

// resolveConnectionLimits reads the per-IP overrides and the
// listener-scoped limits, which must name a configured listener.
func (b *Broker) resolveConnectionLimits(r *reader, scoped map[string]string) error {
	overrides, err := ParseConnectionOverrides(r.text("max.connections.per.ip.overrides"))
	if err != nil {
		return b.ruleError(r, "max.connections.per.ip.overrides", err.Error())
	}
	b.MaxConnectionsPerIPOverrides = overrides
	b.ListenerMaxConnections = map[string]int{}
	b.ListenerConnectionCreationRate = map[string]int{}
	for _, key := range slices.Sorted(maps.Keys(scoped)) {
		value := scoped[key]
		name, prop, _ := listenerScoped(key)
		if !slices.Contains(listenerScopedProperties, prop) {
			continue // a listener's TLS settings: resolveTLS
		}
		base := theRegistry().byName[prop]
		if reason, ok := base.Validate(value); !ok {
			return &Error{Key: key, Value: value, Reason: reason, Origin: b.origins[key]}
		}
		if _, ok := b.ListenerByName(name); !ok {
			return &Error{Key: key, Value: value, Origin: b.origins[key],
				Reason: fmt.Sprintf("a listener in listeners (listeners has %s)", listenerNames(b.Listeners))}
		}
		n, _ := strconv.Atoi(value) // validated above
		if prop == "max.connections" {
			b.ListenerMaxConnections[name] = n
		} else {
			b.ListenerConnectionCreationRate[name] = n
		}
	}
	if q := b.QueuedMaxRequestBytes; q != -1 && q < int64(b.SocketRequestMaxBytes) {
		return b.ruleError(r, "queued.max.request.bytes",
			fmt.Sprintf("-1 or at least socket.request.max.bytes (%d): a frame that can never fit would stall its connection", b.SocketRequestMaxBytes))
	}
	if q := b.QueuedMaxRequestBytes; q == 0 {
		return b.ruleError(r, "queued.max.request.bytes", "-1 or at least socket.request.max.bytes")
	}
	return nil
}

// IsControllerListener reports whether the listener carries controller
// traffic.
func (b *Broker) IsControllerListener(name string) bool { return b.isControllerListener(name) }
