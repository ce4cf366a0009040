package rpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TLSUpgrade runs the client side of a TLS handshake with cfg.
func TLSUpgrade(cfg *tls.Config) Upgrade {
	return func(ctx context.Context, nc net.Conn) (net.Conn, error) {
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		return tc, nil
	}
}

// PlainLogin authenticates nc with SASL PLAIN before the connection
// carries anything else (see Login). The password is never part of an
// error.
func PlainLogin(ctx context.Context, nc net.Conn, clientID, user, password string) error {
	_, err := LoginUpgrade(plain.Auth{User: user, Pass: password}.AsMechanism(), clientID)(ctx, nc)
	return err
}
