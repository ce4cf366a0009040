package tlsconf

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/testcert"
)

// handshake runs a TLS handshake over loopback TCP (whose buffers let
// either side write its alert without the other reading) and returns the
// server's leaf certificate as the client saw it, or each side's error.
func handshake(t *testing.T, srv *Server, client *tls.Config) (serverCN string, clientErr, serverErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer nc.Close()
		done <- tls.Server(nc, srv.Config()).Handshake()
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := tls.Client(nc, client)
	clientErr = c.Handshake()
	if clientErr == nil {
		serverCN = c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	return serverCN, clientErr, <-done
}

func TestClientAuthAndReload(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	other := testcert.NewCA(t, dir, "other")
	server := ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	alice := ca.Issue("alice", pkix.Name{CommonName: "alice"})
	mallory := other.Issue("mallory", pkix.Name{CommonName: "mallory"})
	set := config.ListenerTLS{
		KeystoreLocation: server.File, TruststoreLocation: ca.CertFile,
		ClientAuth: "required", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
	}
	var reloads []error
	srv, err := NewServer(set, func(err error) { reloads = append(reloads, err) })
	if err != nil {
		t.Fatal(err)
	}
	client := func(cert *testcert.Leaf) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if cert != nil {
			// Sent even when its issuer is not among the server's
			// acceptable CAs, as a misconfigured client would.
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert.TLS, nil }
		}
		return c
	}
	if cn, cerr, serr := handshake(t, srv, client(&alice)); cerr != nil || serr != nil || cn != "broker-1" {
		t.Fatalf("trusted client: cn %q, client %v, server %v", cn, cerr, serr)
	}
	if _, _, serr := handshake(t, srv, client(nil)); serr == nil || !strings.Contains(serr.Error(), "didn't provide a certificate") {
		t.Errorf("client without certificate: server error %v", serr)
	}
	if _, _, serr := handshake(t, srv, client(&mallory)); serr == nil || !strings.Contains(serr.Error(), "unknown authority") {
		t.Errorf("untrusted client: server error %v", serr)
	}

	// Renew the server certificate in place: the next handshake uses it.
	renewed := ca.Issue("renewed", pkix.Name{CommonName: "broker-1-renewed"})
	data, err := os.ReadFile(renewed.File)
	if err != nil {
		t.Fatal(err)
	}
	writeNewer(t, server.File, data)
	if cn, cerr, serr := handshake(t, srv, client(&alice)); cerr != nil || serr != nil || cn != "broker-1-renewed" {
		t.Fatalf("after renewal: cn %q, client %v, server %v", cn, cerr, serr)
	}
	if len(reloads) != 1 || reloads[0] != nil {
		t.Fatalf("reloads %v, want one success", reloads)
	}
	// A broken file is reported once and the last good one stays in use.
	writeNewer(t, server.File, []byte("not pem"))
	for range 2 {
		if cn, _, serr := handshake(t, srv, client(&alice)); serr != nil || cn != "broker-1-renewed" {
			t.Fatalf("after a bad file: cn %q, server %v", cn, serr)
		}
	}
	if len(reloads) != 2 || reloads[1] == nil {
		t.Fatalf("reloads %v, want a success then one failure", reloads)
	}
}

// writeNewer replaces a file and moves its modification time forward, so
// that the change is seen even within the file system's time granularity.
func writeNewer(t *testing.T, path string, data []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	next := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, next, next); err != nil {
		t.Fatal(err)
	}
}

func TestProtocolsAndInline(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	server := ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	srv, err := NewServer(config.ListenerTLS{
		KeystoreCertificateChain: string(server.CertPEM), KeystoreKey: string(server.KeyPEM),
		ClientAuth: "none", EnabledProtocols: []string{"TLSv1.3"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, cerr, _ := handshake(t, srv, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12}); cerr == nil {
		t.Error("a TLS 1.2 client got through a TLSv1.3-only listener")
	}
	if cn, cerr, _ := handshake(t, srv, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); cerr != nil || cn != "broker-1" {
		t.Errorf("TLS 1.3 client: %q %v", cn, cerr)
	}
}

func TestBadStores(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	server := ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	protos := []string{"TLSv1.2", "TLSv1.3"}
	tests := []struct {
		name string
		set  config.ListenerTLS
		want string
	}{
		{"missing file", config.ListenerTLS{KeystoreLocation: dir + "/none.pem", EnabledProtocols: protos}, "no such file"},
		{"encrypted key", config.ListenerTLS{KeystoreCertificateChain: string(server.CertPEM), KeystoreKey: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", EnabledProtocols: protos}, "encrypted"},
		{"empty trust store", config.ListenerTLS{KeystoreLocation: server.File, TruststoreCertificates: "junk", ClientAuth: "required", EnabledProtocols: protos}, "no PEM CERTIFICATE block"},
	}
	for _, tt := range tests {
		if _, err := NewServer(tt.set, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestClientConfig: a node dials with its listener's key store as the
// client certificate and verifies the peer with its trust store.
func TestClientConfig(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	other := testcert.NewCA(t, dir, "other")
	b1 := ca.Issue("b1", pkix.Name{CommonName: "broker-1"})
	b2 := ca.Issue("b2", pkix.Name{CommonName: "broker-2"})
	protos := []string{"TLSv1.2", "TLSv1.3"}
	srv, err := NewServer(config.ListenerTLS{KeystoreLocation: b1.File, TruststoreLocation: ca.CertFile,
		ClientAuth: "required", EnabledProtocols: protos}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dialer := config.ListenerTLS{KeystoreLocation: b2.File, TruststoreLocation: ca.CertFile, EnabledProtocols: protos}
	cfg, err := ClientConfig(dialer, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if cn, cerr, serr := handshake(t, srv, cfg); cerr != nil || serr != nil || cn != "broker-1" {
		t.Fatalf("mutual TLS between nodes: cn %q, client %v, server %v", cn, cerr, serr)
	}
	// The wrong name: Kafka's endpoint identification refuses it.
	cfg, _ = ClientConfig(dialer, "broker.example")
	if _, cerr, _ := handshake(t, srv, cfg); cerr == nil {
		t.Error("a certificate not naming the dialed host was accepted")
	}
	// A trust store without the peer's CA.
	cfg, _ = ClientConfig(config.ListenerTLS{KeystoreLocation: b2.File, TruststoreLocation: other.CertFile, EnabledProtocols: protos}, "127.0.0.1")
	if _, cerr, _ := handshake(t, srv, cfg); cerr == nil {
		t.Error("a peer from an untrusted CA was accepted")
	}
}
