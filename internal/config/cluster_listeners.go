package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skein-log/skein/internal/sasl"
)

// checkClusterListeners checks the listeners nodes dial each other on
// (the controller listeners, the inter-broker listener). Each node dials
// with that listener's own settings: over TLS its key store is the client
// certificate, over SASL the listener's JAAS username and password are the
// login (as Kafka's brokers log in). Such a listener grants the broker
// principal only to a certificate or SASL user in super.users (Kafka's
// model: brokers are super users), so super.users must name them.
func (b *Broker) checkClusterListeners(r *reader) error {
	for _, l := range b.securedListeners() {
		cluster := b.isControllerListener(l.Name) || l.Name == b.InterBrokerListenerName
		if !cluster || l.SecurityProtocol == ProtocolPlaintext {
			continue
		}
		scoped := func(prop string) string {
			k := "listener.name." + strings.ToLower(l.Name) + "." + prop
			if _, own := b.origins[k]; own {
				return k
			}
			return prop
		}
		if UsesSASL(l.SecurityProtocol) {
			set := b.ListenerSASL[l.Name]
			if !slices.Contains(set.Mechanisms, b.InterBrokerSASLMechanism) {
				return b.ruleError(r, "sasl.mechanism.inter.broker.protocol",
					fmt.Sprintf("one of sasl.enabled.mechanisms (%s)", strings.Join(set.Mechanisms, ", ")))
			}
			if set.LoginUser == "" || set.LoginPassword == "" {
				k := set.LoginKey
				module := sasl.LoginModuleOf(b.InterBrokerSASLMechanism)
				return &Error{Key: k, Value: "(hidden)", Origin: b.origins[k],
					Reason: fmt.Sprintf(`a %s entry with username="..." password="..." on %s, a listener the nodes dial: they log in with them`,
						module[strings.LastIndexByte(module, '.')+1:], l.Name)}
			}
		} else if t := b.ListenerTLS[l.Name]; t.ClientAuth != "required" {
			k := scoped("ssl.client.auth")
			return &Error{Key: k, Value: t.ClientAuth, Origin: b.origins[k],
				Reason: fmt.Sprintf("required on %s, a listener the nodes dial: a node proves it is a broker by its certificate (mutual TLS)", l.Name)}
		}
		if len(b.SuperUsers) == 0 {
			return b.ruleError(r, "super.users",
				fmt.Sprintf("the brokers' principals (their certificates' User:CN=... or SASL users) when %s, a listener the nodes dial, uses %s: only super users act as brokers there", l.Name, l.SecurityProtocol))
		}
	}
	return nil
}
