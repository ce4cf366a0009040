package node

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/testcert"
)

// TestClosedByPeer runs the server side of real TLS handshakes over
// loopback TCP against clients that go away or misbehave, and checks
// which endings closedByPeer takes for a client that left (not counted
// as a TLS failure) and which stay failures.
func TestClosedByPeer(t *testing.T) {
	ca := testcert.NewCA(t, t.TempDir(), "ca")
	leaf := ca.Issue("broker", pkix.Name{CommonName: "broker"})
	serverCfg := &tls.Config{Certificates: []tls.Certificate{leaf.TLS}, MinVersion: tls.VersionTLS12}

	cases := []struct {
		name   string
		client func(t *testing.T, c *net.TCPConn)
		closed bool
	}{
		{"closes before its hello", func(t *testing.T, c *net.TCPConn) { c.Close() }, true},
		{"closes inside its first record", func(t *testing.T, c *net.TCPConn) {
			// A handshake record header announcing 100 bytes, then 5.
			c.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x64, 1, 2, 3, 4, 5})
			c.Close()
		}, true},
		{"resets the connection", func(t *testing.T, c *net.TCPConn) {
			c.SetLinger(0)
			c.Close()
		}, true},
		{"speaks Kafka without TLS", func(t *testing.T, c *net.TCPConn) {
			// The start of an ApiVersions request frame.
			c.Write([]byte{0, 0, 0, 20, 0, 18, 0, 3, 0, 0, 0, 1, 0, 4})
			c.Close()
		}, false},
		{"refuses the broker's certificate", func(t *testing.T, c *net.TCPConn) {
			// No roots: the client rejects the chain and sends an alert.
			tc := tls.Client(c, &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
			tc.SetDeadline(time.Now().Add(10 * time.Second))
			if err := tc.Handshake(); err == nil {
				t.Error("a client without the CA accepted the broker's certificate")
			}
			tc.Close()
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
				if err != nil {
					t.Error(err)
					return
				}
				tc.client(t, c)
			}()
			nc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			srv := tls.Server(nc, serverCfg)
			srv.SetDeadline(time.Now().Add(10 * time.Second))
			herr := srv.Handshake()
			<-done
			if herr == nil {
				t.Fatal("the handshake succeeded")
			}
			if got := closedByPeer(herr); got != tc.closed {
				t.Fatalf("closedByPeer(%v) = %v, want %v", herr, got, tc.closed)
			}
		})
	}
}
