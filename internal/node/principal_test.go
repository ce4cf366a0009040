package node

import (
	"testing"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
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
