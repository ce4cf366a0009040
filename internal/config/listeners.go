package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	// Name is upper-cased, as Kafka normalises listener names.
	Name string
	// Host may be empty (listeners only): bind every interface.
	Host string
	// Port 0 asks the OS for a free port (listeners only; handy in tests).
	Port int
	// SecurityProtocol comes from listener.security.protocol.map; set by
	// the loader, empty from ParseListeners.
	SecurityProtocol string
}

// Addr is host:port, bracketing IPv6 hosts.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one member of controller.quorum.voters.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is host:port, bracketing IPv6 hosts.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// AdminListener is one entry of admin.listeners: an HTTP address serving
// metrics and health checks.
type AdminListener struct {
	Host string
	Port int
}

// Addr is host:port, bracketing IPv6 hosts.
func (a AdminListener) Addr() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// ParseListeners parses "NAME://host:port,..." as Kafka's listeners
// property. Names are case-insensitive and must be unique.
func ParseListeners(s string) ([]Listener, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make([]Listener, 0, len(items))
	seen := make(map[string]bool, len(items))
	for _, item := range items {
		name, hostPort, ok := strings.Cut(item, "://")
		if !ok {
			return nil, fmt.Errorf("%q: expected NAME://host:port", item)
		}
		name = strings.ToUpper(name)
		if !validListenerName(name) {
			return nil, fmt.Errorf("%q: listener name must be letters, digits and underscores", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		host, port, err := splitHostPort(hostPort, 0)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, Listener{Name: name, Host: host, Port: port})
	}
	return out, nil
}

// ParseBootstrapServers parses controller.quorum.bootstrap.servers:
// "host:port,..." (KIP-853), where the controllers of a dynamic quorum are
// found. Hosts must be given.
func ParseBootstrapServers(s string) ([]string, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		host, port, err := splitHostPort(item, 1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%q: host must not be empty", item)
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return out, nil
}

// ParseVoters parses controller.quorum.voters: "id@host:port,...". Ids must
// be unique and non-negative; hosts must be given (a voter must be dialable).
func ParseVoters(s string) ([]Voter, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make([]Voter, 0, len(items))
	seen := make(map[int32]bool, len(items))
	for _, item := range items {
		idText, hostPort, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("%q: expected id@host:port", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q: voter id must be a non-negative integer", item)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("voter id %d appears twice", id)
		}
		seen[int32(id)] = true
		host, port, err := splitHostPort(hostPort, 1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%q: voter host must not be empty", item)
		}
		out = append(out, Voter{ID: int32(id), Host: host, Port: port})
	}
	return out, nil
}

// ParseAdminListeners parses admin.listeners: "http://host:port,...".
func ParseAdminListeners(s string) ([]AdminListener, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make([]AdminListener, 0, len(items))
	for _, item := range items {
		hostPort, ok := strings.CutPrefix(item, "http://")
		if !ok {
			return nil, fmt.Errorf("%q: expected http://host:port", item)
		}
		host, port, err := splitHostPort(hostPort, 0)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, AdminListener{Host: host, Port: port})
	}
	return out, nil
}

// securityProtocols are Kafka's protocol names. Skein serves those in
// servedProtocols; the others parse so the error can say exactly that.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// ParseProtocolMap parses listener.security.protocol.map:
// "LISTENER:PROTOCOL,...", returning upper-cased names.
func ParseProtocolMap(s string) (map[string]string, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(items))
	for _, item := range items {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !validListenerName(name) {
			return nil, fmt.Errorf("%q: expected LISTENER:PROTOCOL", item)
		}
		if !slices.Contains(securityProtocols, proto) {
			return nil, fmt.Errorf("%q: protocol must be one of %s", item, strings.Join(securityProtocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s is mapped twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

// splitHostPort accepts "host:port", ":port" and "[v6]:port" with a port
// between minPort and 65535.
func splitHostPort(hostPort string, minPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, fmt.Errorf("bad host:port: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < minPort || port > 65535 {
		return "", 0, fmt.Errorf("port must be between %d and 65535", minPort)
	}
	if strings.ContainsAny(host, " /@,") {
		return "", 0, fmt.Errorf("bad host %q", host)
	}
	return host, port, nil
}

func validListenerName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
