package node

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/testcert"
	"github.com/skein-log/skein/internal/tlsconf"
)

func TestListenerPrincipal(t *testing.T) {
	dedicated, err := config.NewBroker(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "REPLICATION",
	})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := config.NewBroker(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		cfg      *config.Broker
		listener string
		want     api.Principal
	}{
		{dedicated, "PLAINTEXT", authz.Anonymous},
		{dedicated, "REPLICATION", api.BrokerPrincipal},
		{dedicated, "CONTROLLER", api.BrokerPrincipal},
		// The only broker listener carries clients too: never the broker.
		{shared, "PLAINTEXT", authz.Anonymous},
		{shared, "CONTROLLER", api.BrokerPrincipal},
	}
	for _, c := range cases {
		if got := listenerPrincipal(c.cfg, c.listener); got != c.want {
			t.Errorf("%s: %v, want %v", c.listener, got, c.want)
		}
	}
}

// TestConnPrincipalOnTLSClusterListener: on an SSL controller or
// inter-broker listener only a certificate of a super user is the broker
// principal; another trusted certificate is that user.
func TestConnPrincipalOnTLSClusterListener(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	broker := ca.Issue("broker", pkix.Name{CommonName: "broker-1"})
	alice := ca.Issue("alice", pkix.Name{CommonName: "alice"})
	cfg, err := config.NewBroker(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
		"inter.broker.listener.name":     "INTERNAL",
		"ssl.keystore.location":          broker.File,
		"ssl.truststore.location":        ca.CertFile,
		"ssl.client.auth":                "required",
		"super.users":                    "User:CN=broker-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := cfg.TLSOf("INTERNAL")
	srv, err := tlsconf.NewServer(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	principal := func(listener string, leaf testcert.Leaf) api.Principal {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		done := make(chan error, 1)
		go func() {
			done <- tls.Client(a, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{leaf.TLS}}).Handshake()
		}()
		tc := tls.Server(b, srv.Config())
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return connPrincipal(cfg, listener, tc)
	}
	for _, l := range []string{"INTERNAL", "CONTROLLER"} {
		if got := principal(l, broker); got != api.BrokerPrincipal {
			t.Errorf("%s, a super user's certificate: %v, want the broker principal", l, got)
		}
		if got, want := principal(l, alice), (api.Principal{Type: "User", Name: "CN=alice"}); got != want {
			t.Errorf("%s, alice's certificate: %v, want %v", l, got, want)
		}
	}
}
