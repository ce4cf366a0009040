package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestUserCommands(t *testing.T) {
	addr := startTestBroker(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("file-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, runUser, "", "create", "--bootstrap-server", addr, "--name", "alice", "--password", "alice-pw")
	if !strings.Contains(out, "SCRAM-SHA-512 credential for user alice (8192 iterations)") {
		t.Fatalf("create printed:\n%s", out)
	}
	mustRun(t, runUser, "", "create", "--bootstrap-server", addr, "--name", "alice", "--mechanism", "SCRAM-SHA-256",
		"--iterations", "4096", "--password-file", pwFile)
	mustRun(t, runUser, "", "create", "--bootstrap-server", addr, "--name", "bob", "--password", "bob-pw")

	out = mustRun(t, runUser, "", "list", "--bootstrap-server", addr)
	for _, want := range []string{
		"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, SCRAM-SHA-512=iterations=8192",
		"SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=8192",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pw") {
		t.Fatalf("list shows a password:\n%s", out)
	}

	mustRun(t, runUser, "", "delete", "--bootstrap-server", addr, "--name", "bob")
	if r := runCLI(t, runUser, "", "list", "--bootstrap-server", addr, "--name", "bob"); !errors.Is(r.err, kerr.ResourceNotFound) {
		t.Fatalf("list a deleted user: %v, want RESOURCE_NOT_FOUND", r.err)
	}
	if r := runCLI(t, runUser, "", "delete", "--bootstrap-server", addr, "--name", "bob"); !errors.Is(r.err, kerr.ResourceNotFound) {
		t.Fatalf("delete twice: %v, want RESOURCE_NOT_FOUND", r.err)
	}
	if r := runCLI(t, runUser, "", "create", "--bootstrap-server", addr, "--name", "carol", "--password", "x",
		"--iterations", "100000"); r.err == nil || !strings.Contains(r.err.Error(), "16384") {
		t.Fatalf("too many iterations: %v", r.err)
	}
	for name, args := range map[string][]string{
		"no name":        {"create", "--bootstrap-server", addr, "--password", "x"},
		"no password":    {"create", "--bootstrap-server", addr, "--name", "d"},
		"both passwords": {"create", "--bootstrap-server", addr, "--name", "d", "--password", "x", "--password-file", pwFile},
		"bad mechanism":  {"create", "--bootstrap-server", addr, "--name", "d", "--password", "x", "--mechanism", "PLAIN"},
	} {
		if r := runCLI(t, runUser, "", args...); r.err == nil {
			t.Errorf("%s: succeeded", name)
		}
	}
}

// TestUserCreatedLogsIn: a user skein user create made logs in with SCRAM
// through --command-config; after skein user delete it is refused.
func TestUserCreatedLogsIn(t *testing.T) {
	b := startTestNode(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
		"connection.failed.authentication.delay.ms=0")
	addr, saslAddr := b.Addr("PLAINTEXT"), b.Addr("SASL_PLAINTEXT")
	cfg := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(cfg, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="dana" password="dana-pw";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, runUser, "", "create", "--bootstrap-server", addr, "--name", "dana", "--mechanism", "SCRAM-SHA-256", "--password", "dana-pw")
	mustRun(t, runTopic, "", "create", "scram-cli", "-b", saslAddr, "--command-config", cfg)
	mustRun(t, runProduce, "one\n", "--topic", "scram-cli", "-b", saslAddr, "--command-config", cfg)

	mustRun(t, runUser, "", "delete", "--bootstrap-server", addr, "--name", "dana", "--mechanism", "SCRAM-SHA-256")
	if r := runCLI(t, runTopic, "", "list", "-b", saslAddr, "--command-config", cfg); !errors.Is(r.err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a deleted user: %v, want SASL_AUTHENTICATION_FAILED", r.err)
	}
}
