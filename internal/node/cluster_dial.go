package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/rpc"
	"github.com/skein-log/skein/internal/tlsconf"
)

// clusterDial is how this node secures a connection it dialed to another
// node's listener at addr, with that listener's own settings, as Kafka's
// brokers use the inter-broker listener's: over TLS its key store is the
// client certificate (mutual TLS) and its trust store verifies the peer;
// over SASL it logs in with the JAAS entry's username and password. nil
// for a PLAINTEXT listener.
func clusterDial(cfg *config.Broker, listener, addr string) (rpc.Upgrade, error) {
	set, isTLS := cfg.TLSOf(listener)
	login, isSASL := cfg.SASLOf(listener)
	if !isTLS && !isSASL {
		return nil, nil
	}
	var tlsCfg *tls.Config
	if isTLS {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("listener %s address %q: %w", listener, addr, err)
		}
		if tlsCfg, err = tlsconf.ClientConfig(set, host); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	clientID := fmt.Sprintf("skein-node-%d", cfg.NodeID)
	return func(ctx context.Context, nc net.Conn) (net.Conn, error) {
		if tlsCfg != nil {
			var err error
			if nc, err = rpc.TLSUpgrade(tlsCfg)(ctx, nc); err != nil {
				return nil, err
			}
		}
		if isSASL {
			// sasl.mechanism.inter.broker.protocol: PLAIN, the one
			// mechanism config accepts for it.
			if err := rpc.PlainLogin(ctx, nc, clientID, login.LoginUser, login.LoginPassword); err != nil {
				return nil, err
			}
		}
		return nc, nil
	}, nil
}

// dialCluster dials another node's listener, secured as clusterDial says.
func dialCluster(ctx context.Context, cfg *config.Broker, local net.IP, listener, addr, clientID string) (*rpc.Conn, error) {
	upgrade, err := clusterDial(cfg, listener, addr)
	if err != nil {
		return nil, err
	}
	return rpc.DialSecure(ctx, local, addr, clientID, upgrade)
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

// quorumSecure secures the Raft connections to the other voters when the
// controller listener is not PLAINTEXT; nil keeps them plaintext.
func (b *Broker) quorumSecure() func(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	listener := controllerListener(b.cfg)
	if l, ok := b.cfg.ListenerByName(listener); !ok || l.SecurityProtocol == config.ProtocolPlaintext {
		return nil
	}
	return func(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
		upgrade, err := clusterDial(b.cfg, listener, addr)
		if err != nil || upgrade == nil {
			return conn, err
		}
		return upgrade(ctx, conn)
	}
}
