package config

import (
	"errors"
	"strings"
	"testing"
)

func TestConnectionLimitProperties(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"max.connections.per.ip.overrides":                      "127.0.0.2:7,[::1]:0",
		"listener.name.plaintext.max.connections":               "12",
		"listener.name.CONTROLLER.max.connection.creation.rate": "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.MaxConnectionsPerIPOverrides["127.0.0.2"] != 7 || b.MaxConnectionsPerIPOverrides["::1"] != 0 {
		t.Errorf("overrides %v", b.MaxConnectionsPerIPOverrides)
	}
	if b.ListenerMaxConnections["PLAINTEXT"] != 12 || b.ListenerConnectionCreationRate["CONTROLLER"] != 3 {
		t.Errorf("listener limits %v %v", b.ListenerMaxConnections, b.ListenerConnectionCreationRate)
	}
	if b.MaxConnectionsPerIP != 2147483647 || b.QueuedMaxRequestBytes != 256<<20 {
		t.Errorf("defaults: per ip %d, queued bytes %d", b.MaxConnectionsPerIP, b.QueuedMaxRequestBytes)
	}
}

func TestConnectionLimitPropertiesRefused(t *testing.T) {
	for props, want := range map[[2]string]string{
		{"max.connections.per.ip.overrides", "broker-a:5"}:              "not an IP address",
		{"max.connections.per.ip.overrides", "127.0.0.1:-1"}:            "non-negative",
		{"max.connections.per.ip.overrides", "127.0.0.1:1,127.0.0.1:2"}: "twice",
		{"listener.name.nosuch.max.connections", "5"}:                   "a listener in listeners",
		{"listener.name.plaintext.max.connections", "0"}:                "between 1 and",
		{"listener.name.plaintext.socket.send.buffer.bytes", "5"}:       "unknown",
		{"queued.max.request.bytes", "1024"}:                            "at least socket.request.max.bytes",
		// Accepted once and never read: refused with what Skein does instead.
		{"replica.high.watermark.checkpoint.interval.ms", "5000"}: "no high-watermark checkpoint",
		{"num.replica.fetchers", "2"}:                             "one replica fetcher",
		{"replica.fetch.backoff.ms", "1000"}:                      "fixed 100 ms",
		{"controller.quorum.election.timeout.ms", "1000"}:         "fixed",
	} {
		_, err := NewBroker(map[string]string{props[0]: props[1]})
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: got %v, want an error saying %q", props[0], props[1], err, want)
		}
	}
}
