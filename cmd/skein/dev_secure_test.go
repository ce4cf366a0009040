package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

var (
	devUserLine     = regexp.MustCompile(`^skein dev: (admin|alice) \(.*\): (\S+)$`)
	devPasswordLine = regexp.MustCompile(`password="([^"]+)"`)
)

// TestDevSecure: `skein dev --secure` serves SASL_SSL with SCRAM-SHA-512
// and prints client properties that the skein CLI and franz-go log in
// with; alice may use topics but not the cluster's ACLs; a client without
// TLS or without credentials is refused; a restart on the same data keeps
// the CA and the users.
func TestDevSecure(t *testing.T) {
	base := devBase(t, 3)
	dataDir := t.TempDir()
	d := startDev(t, "--secure", "--port", fmt.Sprint(base), "--data", dataDir)
	addrs := strings.Split(d.await(t, devReadyLine, 90*time.Second)[2], ",")
	files := map[string]string{}
	for len(files) < 2 {
		m := d.await(t, devUserLine, 5*time.Second)
		files[m[1]] = m[2]
	}
	d.await(t, regexp.MustCompile(`press Ctrl-C`), 5*time.Second)

	cli := func(user string, args ...string) (string, string, int) {
		args = append(args, "--bootstrap-server", addrs[1], "--command-config", files[user])
		stdout, stderr, code, _ := runBin(t, 60*time.Second, args...)
		return stdout, stderr, code
	}
	if out, errOut, code := cli("alice", "topic", "create", "--topic", "secure-dev", "--partitions", "3"); code != 0 {
		t.Fatalf("alice creates a topic: exit %d\n%s%s", code, out, errOut)
	}
	// skein perf over SASL_SSL with SCRAM-SHA-512 as alice: it creates
	// its topic, produces acks=all and reads every record back.
	if out, errOut, code := cli("alice", "perf", "produce", "--topic", "secure-perf", "--partitions", "3",
		"--num-records", "500", "--record-size", "1024"); code != 0 || !strings.Contains(out, "500 records sent") {
		t.Fatalf("perf produce over TLS+SCRAM: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := cli("alice", "perf", "consume", "--topic", "secure-perf", "--messages", "500",
		"--timeout", "30s", "--json"); code != 0 || !strings.Contains(out, `"records":500`) {
		t.Fatalf("perf consume over TLS+SCRAM: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := cli("alice", "acl", "list"); code == 0 || !strings.Contains(out+errOut, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("alice lists ACLs: exit %d, want CLUSTER_AUTHORIZATION_FAILED\n%s%s", code, out, errOut)
	}
	if out, errOut, code := cli("admin", "acl", "list"); code != 0 || !strings.Contains(out, "User:alice") {
		t.Errorf("admin lists alice's ACLs: exit %d\n%s%s", code, out, errOut)
	}

	props, err := os.ReadFile(files["alice"])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "tls", "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the CA: %v", err)
	}
	alicePass := devPasswordLine.FindSubmatch(props)[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	franz := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// A request that answers the login's error, then a produce.
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(attempt, cl); err != nil {
			return err
		}
		return cl.ProduceSync(attempt, &kgo.Record{Topic: "secure-dev", Value: []byte("v")}).FirstErr()
	}
	tlsCfg := &tls.Config{RootCAs: pool}
	login := kgo.SASL(scram.Auth{User: "alice", Pass: string(alicePass)}.AsSha512Mechanism())
	if err := franz(kgo.DialTLSConfig(tlsCfg), login); err != nil {
		t.Errorf("franz-go as alice with the printed properties: %v", err)
	}
	if err := franz(kgo.DialTLSConfig(tlsCfg), kgo.SASL(scram.Auth{User: "alice", Pass: "guess"}.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := franz(login); err == nil {
		t.Error("a client without TLS was served")
	}
	if err := franz(kgo.DialTLSConfig(tlsCfg)); err == nil {
		t.Error("a client without credentials was served")
	}

	if _, code := d.interrupt(t, ctrlCLimit); code != 0 {
		t.Fatalf("exit %d after Ctrl-C; stderr:\n%s", code, d.stderr.String())
	}
	d = startDev(t, "--secure", "--port", fmt.Sprint(base), "--data", dataDir)
	d.await(t, devReadyLine, 90*time.Second)
	if again, err := os.ReadFile(files["alice"]); err != nil || string(again) != string(props) {
		t.Errorf("a restart on the same data changed alice's properties: %v\n%s", err, again)
	}
	if out, errOut, code := cli("alice", "topic", "list"); code != 0 || !strings.Contains(out, "secure-dev") {
		t.Errorf("alice after a restart: exit %d\n%s%s", code, out, errOut)
	}
	d.interrupt(t, ctrlCLimit)
}
