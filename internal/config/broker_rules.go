package config

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// ruleError reports a cross-property rule broken by key's effective value.
func (b *Broker) ruleError(r *reader, key, reason string) *Error {
	return &Error{Key: key, Value: r.text(key), Reason: reason, Origin: b.origins[key]}
}

// resolveNetwork fills listeners, the inter-broker and controller listener
// names, advertised listeners, voters and admin listeners, checking the
// rules Kafka's KafkaConfig checks so that a bad combination fails at start
// rather than as a hang when brokers cannot reach each other.
func (b *Broker) resolveNetwork(r *reader) error {
	listeners, err := ParseListeners(r.text("listeners"))
	if err != nil {
		return b.ruleError(r, "listeners", err.Error())
	}
	protocols, err := ParseProtocolMap(r.text("listener.security.protocol.map"))
	if err != nil {
		return b.ruleError(r, "listener.security.protocol.map", err.Error())
	}
	for i, l := range listeners {
		proto, ok := protocols[l.Name]
		if !ok && slices.Contains(securityProtocols, l.Name) {
			proto, ok = l.Name, true // Kafka: a listener named after a protocol uses it
		}
		if !ok {
			return b.ruleError(r, "listener.security.protocol.map",
				fmt.Sprintf("a map covering every listener: %s has no security protocol", l.Name))
		}
		if !slices.Contains(servedProtocols, proto) {
			return b.ruleError(r, "listeners",
				fmt.Sprintf("%s listeners only: %s uses %s", strings.Join(servedProtocols, ", "), l.Name, proto))
		}
		listeners[i].SecurityProtocol = proto
	}
	b.Listeners = listeners

	for _, name := range r.list("controller.listener.names") {
		b.ControllerListenerNames = append(b.ControllerListenerNames, strings.ToUpper(name))
	}
	if b.HasRole(RoleController) {
		if len(b.ControllerListenerNames) == 0 {
			return b.ruleError(r, "controller.listener.names", "non-empty when process.roles includes controller")
		}
		if _, ok := b.ControllerListener(); !ok {
			return b.ruleError(r, "controller.listener.names",
				fmt.Sprintf("the name of a listener in listeners when process.roles includes controller (listeners has %s)", listenerNames(listeners)))
		}
	}
	if !b.HasRole(RoleBroker) {
		// A controller-only node hosts no partitions and serves no client:
		// a client listener there would only mislead (Kafka refuses it).
		for _, l := range listeners {
			if !b.isControllerListener(l.Name) {
				return b.ruleError(r, "listeners",
					fmt.Sprintf("only controller listeners (%s) on a controller-only node (%s is not one)", strings.Join(b.ControllerListenerNames, ", "), l.Name))
			}
		}
		if err := b.resolveBrokerDialListener(r, protocols); err != nil {
			return err
		}
		if r.text("advertised.listeners") != "" {
			adv, err := ParseListeners(r.text("advertised.listeners"))
			if err != nil {
				return b.ruleError(r, "advertised.listeners", err.Error())
			}
			for _, a := range adv {
				if !b.isControllerListener(a.Name) {
					return b.ruleError(r, "advertised.listeners",
						fmt.Sprintf("free of client listeners on a controller-only node (%s is one)", a.Name))
				}
			}
		}
	}
	if !b.HasRole(RoleController) {
		if len(b.ControllerListenerNames) == 0 {
			// As in Kafka: it names how the controllers are reached.
			return b.ruleError(r, "controller.listener.names", "non-empty on a broker-only node")
		}
		// A broker-only node dials the controllers with the controller
		// listener's settings (listener.name.NAME.ssl.*, the SASL login)
		// although it does not listen there, as Kafka's brokers do.
		for _, name := range b.ControllerListenerNames {
			proto, ok := protocols[name]
			if !ok && slices.Contains(securityProtocols, name) {
				proto, ok = name, true
			}
			if !ok {
				proto = ProtocolPlaintext
			}
			if !slices.Contains(servedProtocols, proto) {
				return b.ruleError(r, "listener.security.protocol.map",
					fmt.Sprintf("%s for controller listener %s: %s is not served", strings.Join(servedProtocols, ", "), name, proto))
			}
			b.DialedListeners = append(b.DialedListeners, Listener{Name: name, SecurityProtocol: proto})
		}
		// Kafka forbids it too: a broker-only node answering on the
		// controller listener would look like a voter it is not.
		for _, l := range listeners {
			if b.isControllerListener(l.Name) {
				return b.ruleError(r, "listeners",
					fmt.Sprintf("free of controller listeners on a node without the controller role (%s is one)", l.Name))
			}
		}
	}
	if b.HasRole(RoleBroker) {
		if err := b.resolveBrokerListeners(r); err != nil {
			return err
		}
	}
	if err := b.resolveVoters(r); err != nil {
		return err
	}
	admin, err := ParseAdminListeners(r.text("admin.listeners"))
	if err != nil {
		return b.ruleError(r, "admin.listeners", err.Error())
	}
	b.AdminListeners = admin
	if v := r.text("outbound.bind.address"); v != "" {
		b.OutboundBindAddress = net.ParseIP(v) // checked by the registry
	}
	return nil
}

func (b *Broker) isControllerListener(name string) bool {
	return slices.Contains(b.ControllerListenerNames, strings.ToUpper(name))
}

// resolveBrokerDialListener takes, on a controller-only node,
// inter.broker.listener.name as the brokers' listener to dial them on
// (the balancer's DescribeLogDirs and AlterReplicaLogDirs), secured by
// its listener.security.protocol.map entry and listener.name.NAME.*
// settings as a broker dials it. Unset, the node dials no broker.
func (b *Broker) resolveBrokerDialListener(r *reader, protocols map[string]string) error {
	name := strings.ToUpper(r.text("inter.broker.listener.name"))
	if name == "" {
		return nil
	}
	if b.isControllerListener(name) {
		return b.ruleError(r, "inter.broker.listener.name", "a listener that is not in controller.listener.names")
	}
	proto, ok := protocols[name]
	if !ok && slices.Contains(securityProtocols, name) {
		proto, ok = name, true
	}
	if !ok {
		return b.ruleError(r, "listener.security.protocol.map",
			fmt.Sprintf("an entry for %s, the brokers' listener inter.broker.listener.name names on this controller-only node", name))
	}
	if !slices.Contains(servedProtocols, proto) {
		return b.ruleError(r, "listener.security.protocol.map",
			fmt.Sprintf("%s for listener %s: %s is not served", strings.Join(servedProtocols, ", "), name, proto))
	}
	b.DialedListeners = append(b.DialedListeners, Listener{Name: name, SecurityProtocol: proto})
	b.BrokerDialListener = name
	return nil
}

// resolveBrokerListeners picks the inter-broker listener and the advertised
// addresses of a node with the broker role.
func (b *Broker) resolveBrokerListeners(r *reader) error {
	name := strings.ToUpper(r.text("inter.broker.listener.name"))
	if proto := r.text("security.inter.broker.protocol"); proto != "" {
		// Kafka: the listener named after the protocol; an error beside
		// inter.broker.listener.name.
		if name != "" {
			return b.ruleError(r, "security.inter.broker.protocol", "unset when inter.broker.listener.name is set (set one of them)")
		}
		if _, ok := b.ListenerByName(proto); !ok {
			return b.ruleError(r, "security.inter.broker.protocol",
				fmt.Sprintf("the name of a listener in listeners (%s) to choose it for inter-broker traffic", listenerNames(b.Listeners)))
		}
		name = proto
	}
	if name == "" {
		for _, l := range b.Listeners {
			if !b.isControllerListener(l.Name) {
				name = l.Name
				break
			}
		}
		if name == "" {
			return b.ruleError(r, "listeners", "a list with a broker listener besides the controller listeners")
		}
	} else {
		if _, ok := b.ListenerByName(name); !ok {
			return b.ruleError(r, "inter.broker.listener.name",
				fmt.Sprintf("the name of a listener in listeners (%s)", listenerNames(b.Listeners)))
		}
		if b.isControllerListener(name) {
			return b.ruleError(r, "inter.broker.listener.name", "a listener that is not in controller.listener.names")
		}
	}
	b.InterBrokerListenerName = name
	b.BrokerDialListener = name

	text := r.text("advertised.listeners")
	if text == "" {
		for _, l := range b.Listeners {
			if !b.isControllerListener(l.Name) {
				b.AdvertisedListeners = append(b.AdvertisedListeners, l)
			}
		}
		return nil
	}
	advertised, err := ParseListeners(text)
	if err != nil {
		return b.ruleError(r, "advertised.listeners", err.Error())
	}
	for i, a := range advertised {
		l, ok := b.ListenerByName(a.Name)
		if !ok {
			return b.ruleError(r, "advertised.listeners",
				fmt.Sprintf("addresses of listeners in listeners (%s): %s is not one", listenerNames(b.Listeners), a.Name))
		}
		if a.Host == "" || net.ParseIP(a.Host) != nil && net.ParseIP(a.Host).IsUnspecified() || a.Port == 0 {
			return b.ruleError(r, "advertised.listeners",
				fmt.Sprintf("dialable addresses: %s has no concrete host and port", a))
		}
		advertised[i].SecurityProtocol = l.SecurityProtocol
	}
	if _, ok := findListener(advertised, name); !ok {
		return b.ruleError(r, "advertised.listeners",
			fmt.Sprintf("a list including the inter-broker listener %s", name))
	}
	b.AdvertisedListeners = advertised
	return nil
}

// resolveVoters reads controller.quorum.voters. Empty on a controller means
// a quorum of one: this node, at its controller listener (never dialled,
// since a single voter talks to no one; "localhost" stands in for a
// wildcard host).
func (b *Broker) resolveVoters(r *reader) error {
	text := r.text("controller.quorum.voters")
	isController := b.HasRole(RoleController)
	b.ControllerQuorumStandalone = r.bool("controller.quorum.standalone")
	if boot := r.text("controller.quorum.bootstrap.servers"); boot != "" {
		if text != "" {
			return b.ruleError(r, "controller.quorum.bootstrap.servers", "empty when controller.quorum.voters is set: a quorum is either static or dynamic")
		}
		servers, err := ParseBootstrapServers(boot)
		if err != nil {
			return b.ruleError(r, "controller.quorum.bootstrap.servers", err.Error())
		}
		b.ControllerQuorumBootstrapServers = servers
		return nil
	}
	if b.ControllerQuorumStandalone {
		return b.ruleError(r, "controller.quorum.standalone", "false without controller.quorum.bootstrap.servers (a static quorum is founded by controller.quorum.voters)")
	}
	if text == "" {
		if !isController {
			return b.ruleError(r, "controller.quorum.voters", "non-empty on a node without the controller role")
		}
		l, _ := b.ControllerListener()
		host := l.Host
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "localhost"
		}
		b.ControllerQuorumVoters = []Voter{{ID: b.NodeID, Host: host, Port: l.Port}}
		return nil
	}
	voters, err := ParseVoters(text)
	if err != nil {
		return b.ruleError(r, "controller.quorum.voters", err.Error())
	}
	b.ControllerQuorumVoters = voters
	isVoter := slices.ContainsFunc(voters, func(v Voter) bool { return v.ID == b.NodeID })
	switch {
	case isController && !isVoter:
		return b.ruleError(r, "node.id", fmt.Sprintf("one of the controller.quorum.voters ids (%s) on a controller", voterIDs(voters)))
	case !isController && isVoter:
		return b.ruleError(r, "node.id", fmt.Sprintf("none of the controller.quorum.voters ids (%s) on a broker-only node", voterIDs(voters)))
	}
	return nil
}

// checkTimings enforces orderings between timeouts that would otherwise
// make the cluster flap (heartbeats slower than the session) or reject
// every consumer (an empty session window).
func (b *Broker) checkTimings(r *reader) error {
	if b.BrokerHeartbeatInterval >= b.BrokerSessionTimeout {
		return b.ruleError(r, "broker.heartbeat.interval.ms",
			fmt.Sprintf("less than broker.session.timeout.ms (%d)", b.BrokerSessionTimeout.Milliseconds()))
	}
	if b.GroupMinSessionTimeout > b.GroupMaxSessionTimeout {
		return b.ruleError(r, "group.min.session.timeout.ms",
			fmt.Sprintf("at most group.max.session.timeout.ms (%d)", b.GroupMaxSessionTimeout.Milliseconds()))
	}
	if b.ReplicaFetchWaitMax > b.ReplicaLagTimeMax {
		return b.ruleError(r, "replica.fetch.wait.max.ms",
			fmt.Sprintf("at most replica.lag.time.max.ms (%d)", b.ReplicaLagTimeMax.Milliseconds()))
	}
	return nil
}

func findListener(ls []Listener, name string) (Listener, bool) {
	name = strings.ToUpper(name)
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return Listener{}, false
}

func listenerNames(ls []Listener) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

func voterIDs(vs []Voter) string {
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = fmt.Sprint(v.ID)
	}
	return strings.Join(ids, ", ")
}
