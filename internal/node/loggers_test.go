package node

import (
	"os"
	"strings"
	"testing"
)

// The broker loggers' documentation names every logger a node has.
func TestBrokerLoggersDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Broker loggers\n")
	if !ok {
		t.Fatal("docs/configuration.md has no Broker loggers section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, n := range append([]string{"root"}, loggerNames...) {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("logger %s is not documented in docs/configuration.md's Broker loggers", n)
		}
	}
}
