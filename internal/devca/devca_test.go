package devca

import (
	"bytes"
	"crypto/x509"
	"os"
	"testing"
	"time"
)

// TestEnsureMakesKeepsAndRenews: a CA is made once and kept by later
// runs; one about to expire is made anew; the node certificate serves and
// dials TLS for 127.0.0.1 under the CA.
func TestEnsureMakesKeepsAndRenews(t *testing.T) {
	dir := t.TempDir() + "/tls"
	now := time.Now()
	f, err := Ensure(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(f.Node)
	if st, _ := os.Stat(f.Node); st.Mode().Perm() != 0o600 {
		t.Errorf("node key file mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := Ensure(dir, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(f.Node); !bytes.Equal(first, again) {
		t.Error("a valid CA was made anew")
	}
	if _, err := Ensure(dir, now.Add(validity-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if renewed, _ := os.ReadFile(f.Node); bytes.Equal(first, renewed) {
		t.Error("a certificate expiring within a day was kept")
	}
	if err := os.WriteFile(f.Node, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, now); err == nil {
		t.Error("a damaged node file was silently replaced")
	}

	f, err = Ensure(t.TempDir(), now)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.NodeTLS()
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if leaf.Subject.CommonName != NodeName {
		t.Errorf("node certificate names %q", leaf.Subject.CommonName)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: cfg.RootCAs, DNSName: "127.0.0.1",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the node certificate does not serve 127.0.0.1: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: cfg.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the node certificate is no client certificate: %v", err)
	}
}
