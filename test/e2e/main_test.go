// Package e2e runs Skein brokers on 127.0.0.1 and drives them with real
// Kafka clients: franz-go, sarama, kafka-go and kcat (librdkafka).
package e2e

import (
	"os"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(binPath[:len(binPath)-len("/skein")])
	}
	os.Exit(code)
}
