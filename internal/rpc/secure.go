package rpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// PlainLogin authenticates nc with SASL PLAIN (SaslHandshake v1, then
// SaslAuthenticate v2), synchronously, before the connection carries
// anything else: the way Kafka's brokers log in to each other's SASL
// listeners. The password is never part of an error.
func PlainLogin(ctx context.Context, nc net.Conn, clientID, user, password string) error {
	if deadline, ok := ctx.Deadline(); ok {
		nc.SetDeadline(deadline)
	} else {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
	}
	defer nc.SetDeadline(time.Time{})
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	br := bufio.NewReader(nc)
	exchange := func(id int32, req kmsg.Request, resp kmsg.Response) error {
		if _, err := nc.Write(f.AppendRequest(nil, req, id)); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n < 4 || n > 1<<20 {
			return fmt.Errorf("response frame of %d bytes", n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, frame); err != nil {
			return err
		}
		body := frame[4:]
		resp.SetVersion(req.GetVersion())
		if resp.IsFlexible() {
			var err error
			if body, err = skipTags(body); err != nil {
				return err
			}
		}
		return resp.ReadFrom(body)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := exchange(0, hs, hsResp); err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake: PLAIN refused (the listener offers %v): %w", hsResp.SupportedMechanisms, err)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	authResp := kmsg.NewPtrSASLAuthenticateResponse()
	if err := exchange(1, auth, authResp); err != nil {
		return fmt.Errorf("SASL authenticate as %s: %w", user, err)
	}
	if err := kerr.ErrorForCode(authResp.ErrorCode); err != nil {
		return fmt.Errorf("SASL authenticate as %s: %w", user, err)
	}
	return nil
}
