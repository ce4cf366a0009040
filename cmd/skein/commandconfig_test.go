package main

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/testcert"
)

// TestCommandConfig: topic, produce, consume and cluster commands reach a
// SASL_SSL listener and a mutual-TLS listener through --command-config,
// written in Kafka's client property names; a wrong password is an error
// naming the cause, not a hang.
func TestCommandConfig(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir, "ca")
	server := ca.Issue("server", pkix.Name{CommonName: "broker-1"})
	alice := ca.Issue("alice", pkix.Name{CommonName: "alice"})
	b := startTestNode(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";`,
		"ssl.keystore.location="+server.File,
		"listener.name.ssl.ssl.client.auth=required",
		"listener.name.ssl.ssl.truststore.location="+ca.CertFile,
		"connection.failed.authentication.delay.ms=0",
	)
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	saslSSL := write("sasl.properties",
		"security.protocol=SASL_SSL",
		"sasl.mechanism=PLAIN",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-pw";`,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location="+ca.CertFile)
	mtls := write("mtls.properties",
		"security.protocol=SSL",
		"ssl.truststore.location="+ca.CertFile,
		"ssl.keystore.type=PEM",
		"ssl.keystore.location="+alice.File)
	saslAddr, sslAddr := b.Addr("SASL_SSL"), b.Addr("SSL")

	mustRun(t, runTopic, "", "create", "secured", "-b", saslAddr, "--command-config", saslSSL)
	mustRun(t, runProduce, "one\ntwo\n", "--topic", "secured", "-b", saslAddr, "--command-config", saslSSL)
	mustRun(t, runProduce, "three\n", "--topic", "secured", "-b", sslAddr, "--command-config", mtls)
	out := mustRun(t, runConsume, "", "--topic", "secured", "--from-beginning", "--max-messages", "3", "-b", sslAddr, "--command-config", mtls)
	if out != "one\ntwo\nthree\n" {
		t.Errorf("consumed over mTLS %q", out)
	}
	mustRun(t, runCluster, "", "describe", "-b", saslAddr, "--command-config", saslSSL)
	if out := mustRun(t, runPerfProduce, "", "--topic", "secured", "--num-records", "20", "-b", sslAddr, "--command-config", mtls); !strings.Contains(out, "20 records sent") {
		t.Errorf("perf produce over mTLS: %s", out)
	}

	wrong := write("wrong.properties", "security.protocol=SASL_SSL", "ssl.truststore.location="+ca.CertFile,
		"sasl.username=alice", "sasl.password=nope")
	r := runCLI(t, runTopic, "", "list", "-b", saslAddr, "--command-config", wrong, "--timeout", "5s")
	if r.err == nil || !strings.Contains(fmt.Sprint(r.err), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("wrong password: %v", r.err)
	}
	bad := write("bad.properties", "security.protocol=SASL_SSL", "sasl.mechanism=GSSAPI", "sasl.username=a")
	if r := runCLI(t, runTopic, "", "list", "-b", saslAddr, "--command-config", bad); r.err == nil || !strings.Contains(r.err.Error(), "sasl.mechanism") {
		t.Errorf("GSSAPI: %v", r.err)
	}
}
