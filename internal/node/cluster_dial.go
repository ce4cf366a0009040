package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/rpc"
	skeinsasl "github.com/skein-log/skein/internal/sasl"
	"github.com/skein-log/skein/internal/tlsconf"
)

// clusterDial is how this node secures a connection it dialed to another
// node's listener at addr, with that listener's own settings, as Kafka's
// brokers use the inter-broker listener's: over TLS its key store is the
// client certificate (mutual TLS) and its trust store verifies the peer
// (secure; nil for no TLS); over SASL it logs in with
// sasl.mechanism.inter.broker.protocol as the JAAS entry's username and
// password (login; nil for no SASL).
func clusterDial(cfg *config.Broker, listener, addr string) (secure rpc.Upgrade, login sasl.Mechanism, err error) {
	set, isTLS := cfg.TLSOf(listener)
	if isTLS {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, nil, fmt.Errorf("listener %s address %q: %w", listener, addr, err)
		}
		tlsCfg, err := tlsconf.ClientConfig(set, host)
		if err != nil {
			return nil, nil, fmt.Errorf("listener %s: %w", listener, err)
		}
		secure = rpc.TLSUpgrade(tlsCfg)
	}
	if creds, isSASL := cfg.SASLOf(listener); isSASL {
		if login, err = loginMechanism(cfg.InterBrokerSASLMechanism, creds.LoginUser, creds.LoginPassword); err != nil {
			return nil, nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	return secure, login, nil
}

// loginMechanism is a node's client side of a mechanism config accepts
// for sasl.mechanism.inter.broker.protocol.
func loginMechanism(mechanism, user, password string) (sasl.Mechanism, error) {
	switch mechanism {
	case skeinsasl.MechanismPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case skeinsasl.MechanismScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case skeinsasl.MechanismScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol %q is not served", mechanism)
}

func clusterClientID(cfg *config.Broker) string { return fmt.Sprintf("skein-node-%d", cfg.NodeID) }

// dialCluster dials another node's listener, secured as clusterDial says;
// a SASL login is renewed in place before its session lifetime ends.
func dialCluster(ctx context.Context, cfg *config.Broker, local net.IP, listener, addr, clientID string) (*rpc.Conn, error) {
	secure, login, err := clusterDial(cfg, listener, addr)
	if err != nil {
		return nil, err
	}
	return rpc.DialLogin(ctx, local, addr, clientID, secure, login)
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
		secure, login, err := clusterDial(b.cfg, listener, addr)
		if err != nil {
			return nil, err
		}
		if secure != nil {
			if conn, err = secure(ctx, conn); err != nil {
				return nil, err
			}
		}
		if login != nil {
			// Not renewed in place: a peer closing an expired Raft
			// connection costs a reconnect, which Raft takes in stride.
			return rpc.LoginUpgrade(login, clusterClientID(b.cfg))(ctx, conn)
		}
		return conn, nil
	}
}
