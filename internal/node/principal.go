package node

import (
	"log/slog"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
)

// listenerPrincipal is the principal of every connection on a listener
// until authentication exists: the cluster's own connections (controller
// listeners, and an inter-broker listener dedicated to brokers) are the
// broker principal; every client listener is User:ANONYMOUS, as Kafka's
// PLAINTEXT listeners are.
//
// A shared inter-broker listener (the only broker listener) carries
// clients too, so its connections are ANONYMOUS: with an authorizer,
// replication then needs a dedicated inter-broker listener
// (docs/security.md).
func listenerPrincipal(cfg *config.Broker, listener string) api.Principal {
	if cfg.IsControllerListener(listener) || isDedicatedInterBrokerListener(cfg, listener) {
		return api.BrokerPrincipal
	}
	return authz.Anonymous
}

func isDedicatedInterBrokerListener(cfg *config.Broker, listener string) bool {
	if cfg.InterBrokerListenerName == "" || listener != cfg.InterBrokerListenerName {
		return false
	}
	brokerListeners := 0
	for _, l := range cfg.Listeners {
		if !cfg.IsControllerListener(l.Name) {
			brokerListeners++
		}
	}
	return brokerListeners > 1
}

// warnSharedInterBrokerListener says, once at start, that an authorizer
// will refuse this broker's replica fetches: they arrive on a listener
// shared with clients, as User:ANONYMOUS.
func warnSharedInterBrokerListener(cfg *config.Broker, log *slog.Logger) {
	if cfg.Authorizer == "" || cfg.InterBrokerListenerName == "" || isDedicatedInterBrokerListener(cfg, cfg.InterBrokerListenerName) {
		return
	}
	if cfg.SuperUsers[authz.Anonymous] {
		return
	}
	log.Warn("authorization is on, but the inter-broker listener is shared with clients: replica fetches arrive as User:ANONYMOUS "+
		"and are refused; give the brokers a listener of their own (inter.broker.listener.name, docs/security.md)",
		"listener", cfg.InterBrokerListenerName)
}
