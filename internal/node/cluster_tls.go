package node

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/tlsconf"
)

// clusterDialTLS is the TLS configuration this node dials another node's
// listener at addr with: that listener's own key store as the client
// certificate (mutual TLS) and its trust store, as Kafka's brokers use the
// inter-broker listener's ssl.* settings for their own connections. nil
// for a plaintext listener.
func clusterDialTLS(cfg *config.Broker, listener, addr string) (*tls.Config, error) {
	set, ok := cfg.TLSOf(listener)
	if !ok {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listener %s address %q: %w", listener, addr, err)
	}
	c, err := tlsconf.ClientConfig(set, host)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", listener, err)
	}
	return c, nil
}

// controllerListener is the listener name the controllers are dialed on.
func controllerListener(cfg *config.Broker) string {
	if len(cfg.ControllerListenerNames) == 0 {
		return ""
	}
	return cfg.ControllerListenerNames[0]
}

// warnPlaintextClusterListeners says, once at start, that with an
// authorizer a plaintext controller or dedicated inter-broker listener
// still makes whoever reaches it a broker (docs/security.md).
func warnPlaintextClusterListeners(cfg *config.Broker, log *slog.Logger) {
	if cfg.Authorizer == "" {
		return
	}
	for _, l := range cfg.Listeners {
		if l.SecurityProtocol != config.ProtocolPlaintext || listenerPrincipal(cfg, l.Name) != api.BrokerPrincipal {
			continue
		}
		log.Warn("authorization is on, but a listener the nodes use is PLAINTEXT: anyone who reaches it acts as a broker; "+
			"make it SSL with ssl.client.auth=required and the brokers' certificate principal in super.users (docs/security.md)",
			"listener", l.Name)
	}
}

// quorumDialTLS secures the Raft connections to the other voters when the
// controller listener is a TLS one; nil keeps them plaintext.
func (b *Broker) quorumDialTLS() func(addr string) (*tls.Config, error) {
	listener := controllerListener(b.cfg)
	if _, ok := b.cfg.TLSOf(listener); !ok {
		return nil
	}
	return func(addr string) (*tls.Config, error) { return clusterDialTLS(b.cfg, listener, addr) }
}
