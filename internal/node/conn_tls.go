package node

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/principalmap"
	"github.com/skein-log/skein/internal/tlsconf"
)

// loadTLS reads the key and trust stores of every TLS listener, so that a
// bad certificate stops the start rather than each handshake.
func (b *Broker) loadTLS() error {
	b.tlsServers = map[string]*tlsconf.Server{}
	for _, l := range b.cfg.Listeners {
		set, ok := b.cfg.TLSOf(l.Name)
		if !ok {
			continue
		}
		name := l.Name
		srv, err := tlsconf.NewServer(set, func(err error) {
			if err != nil {
				b.logger(loggerConnection).Error("TLS key or trust store changed but cannot be used; the previous one stays in use", "listener", name, "err", err)
				return
			}
			b.logger(loggerConnection).Info("TLS key and trust stores reloaded", "listener", name)
		})
		if err != nil {
			return fmt.Errorf("listener %s: %w", name, err)
		}
		b.tlsServers[name] = srv
	}
	return nil
}

// startTLS runs the server side of the TLS handshake of a connection
// accepted on a TLS listener, within ssl.handshake.timeout.ms. On failure
// it logs one line, counts it and returns false; the caller closes nc.
func (b *Broker) startTLS(nc net.Conn, listener string) (*tls.Conn, bool) {
	srv := b.tlsServers[listener]
	tc := tls.Server(nc, srv.Config())
	nc.SetDeadline(time.Now().Add(b.cfg.HandshakeTimeout))
	if b.draining.Load() {
		// drainConns may have moved the deadline into the past just
		// before it was set here.
		return nil, false
	}
	err := tc.Handshake()
	if err == nil {
		if _, err := b.certPrincipal(tc, listener); err != nil {
			b.metrics.TLSFailed(listener, "principal_mapping")
			b.logger(loggerConnection).Info("closing connection: client certificate refused", "listener", listener,
				"remote", nc.RemoteAddr().String(), "err", err)
			return nil, false
		}
		nc.SetDeadline(time.Time{})
		return tc, true
	}
	if b.draining.Load() {
		return nil, false // the broker stops: not the client's fault
	}
	if closedByPeer(err) {
		// The client went away before the handshake was done: a client
		// closing a connection it no longer needs while it was still
		// being set up (at its own shutdown, say). Nothing was refused,
		// so, as Kafka counts only handshakes that failed, it is not
		// counted as a TLS failure.
		b.logger(loggerConnection).Debug("connection closed by the client during the TLS handshake", "listener", listener,
			"remote", nc.RemoteAddr().String(), "err", err)
		return nil, false
	}
	reason := handshakeFailure(err)
	b.metrics.TLSFailed(listener, reason)
	b.logger(loggerConnection).Info("closing connection: TLS handshake failed", "listener", listener,
		"remote", nc.RemoteAddr().String(), "reason", reason, "err", err)
	return nil, false
}

// closedByPeer reports whether a handshake ended because the client
// closed or reset the connection, with no TLS alert or malformed record:
// the end of the stream (io.EOF before a record, io.ErrUnexpectedEOF
// inside one) or a reset or broken pipe from the client's side. A client
// that refuses the broker's certificate sends an alert instead, which
// crypto/tls reports as a remote error.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// handshakeFailure names, for the metric and the log, why a handshake
// failed.
func handshakeFailure(err error) string {
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return "plaintext_on_tls"
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "timeout"
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return "untrusted_certificate"
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return "untrusted_certificate"
	}
	// crypto/tls has no typed error for a missing client certificate.
	if err.Error() == "tls: client didn't provide a certificate" {
		return "no_client_certificate"
	}
	return "handshake"
}

// errTLSOnPlaintext ends a plaintext connection whose client started TLS.
var errTLSOnPlaintext = errors.New("a TLS handshake on a plaintext listener")

// checkNotTLS looks at the first bytes of a plaintext connection: a TLS
// ClientHello record starts 0x16 0x03, which as a Kafka frame size would
// announce a ~370 MB request. Saying what it is helps the operator whose
// client has security.protocol=SSL against a PLAINTEXT listener.
func checkNotTLS(br *bufio.Reader) error {
	head, err := br.Peek(2)
	if err != nil {
		return nil // the frame reader reports it
	}
	if head[0] == 0x16 && head[1] == 0x03 {
		return errTLSOnPlaintext
	}
	return nil
}

// userPrincipalType is Kafka's principal type of authenticated users
// (KafkaPrincipal.USER_TYPE), the type ANONYMOUS has too.
var userPrincipalType = authz.Anonymous.Type

// connPrincipal is who a connection authenticated as before any SASL.
// On the cluster's own listeners (listenerPrincipal) it is the broker
// principal: on a plaintext one for anyone who reaches it (the documented
// risk), on a TLS one only for a client certificate whose mapped
// principal is in super.users (Kafka's model: brokers are super users);
// any other certificate there is that user, authorized as a client.
// On a SASL one it is User:ANONYMOUS until a login as a super user.
// Elsewhere it is the subject of a verified client certificate (RFC 2253)
// mapped by ssl.principal.mapping.rules, else User:ANONYMOUS.
func connPrincipal(cfg *config.Broker, listener string, nc net.Conn) api.Principal {
	p := listenerPrincipal(cfg, listener)
	tc, isTLS := nc.(*tls.Conn)
	if _, isSASL := cfg.SASLOf(listener); p == api.BrokerPrincipal && isSASL {
		// A broker's SASL login (connSASL.Authenticate) makes it the
		// broker; until then it is nobody.
		return authz.Anonymous
	}
	if p == api.BrokerPrincipal && !isTLS {
		return p
	}
	if isTLS {
		// startTLS refused a certificate the rules do not map.
		if name, _ := certPrincipalName(cfg, tc, listener); name != "" {
			user := api.Principal{Type: userPrincipalType, Name: name}
			if p == api.BrokerPrincipal && cfg.SuperUsers[user] {
				return api.BrokerPrincipal
			}
			return user
		}
	}
	if p == api.BrokerPrincipal {
		return authz.Anonymous // a TLS cluster listener without a certificate
	}
	return p
}

// certPrincipal maps a verified client certificate's subject with the
// listener's ssl.principal.mapping.rules; "" without a verified one.
func (b *Broker) certPrincipal(tc *tls.Conn, listener string) (string, error) {
	return certPrincipalName(b.cfg, tc, listener)
}

func certPrincipalName(cfg *config.Broker, tc *tls.Conn, listener string) (string, error) {
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return "", nil
	}
	set, _ := cfg.TLSOf(listener)
	return principalmap.MapPrincipal(set.PrincipalMapping, st.PeerCertificates[0].Subject.String())
}
