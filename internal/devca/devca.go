// Package devca makes and keeps a throwaway certificate authority for a
// local cluster (`skein dev --secure`): a CA and one certificate that
// every node (and tools acting as a node) present, for 127.0.0.1 and
// localhost, written as PEM files in one directory and reused by later
// runs on the same data, so clients keep trusting the same CA.
package devca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// NodeName is the common name of the nodes' certificate; with the
// mapping rule the cluster is given, its principal is User:skein-node.
const NodeName = "skein-node"

// validity is how long generated certificates last; renewalMargin is how
// close to its end a kept certificate is made anew instead.
const (
	validity      = 365 * 24 * time.Hour
	renewalMargin = 24 * time.Hour
)

// Files are the PEM files of a local cluster's CA.
type Files struct {
	Dir string
	// CA is the CA certificate: the trust store of nodes and clients.
	CA string
	// CAKey is the CA's private key, kept only to issue the node's
	// certificate again.
	CAKey string
	// Node holds the nodes' private key and certificate chain, leaf
	// first (Kafka's PEM key store).
	Node string
}

// FilesIn names the files in dir.
func FilesIn(dir string) Files {
	return Files{Dir: dir, CA: filepath.Join(dir, "ca.pem"), CAKey: filepath.Join(dir, "ca-key.pem"), Node: filepath.Join(dir, "node.pem")}
}

// Ensure returns the CA in dir, making it (and the node certificate)
// when missing, unreadable or within a day of expiring at now.
func Ensure(dir string, now time.Time) (Files, error) {
	f := FilesIn(dir)
	if err := f.check(now); err == nil {
		return f, nil
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errExpiring) {
		return Files{}, fmt.Errorf("devca: %s: %w (remove the directory to make a new CA)", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("devca: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("devca: key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "skein dev CA", Organization: []string{"Skein (throwaway, local)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, fmt.Errorf("devca: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, fmt.Errorf("devca: %w", err)
	}
	nodeKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("devca: key: %w", err)
	}
	nodeTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: NodeName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Nodes are servers to clients and clients of each other.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost"},
	}
	nodeDER, err := x509.CreateCertificate(rand.Reader, nodeTmpl, caCert, &nodeKey.PublicKey, caKey)
	if err != nil {
		return Files{}, fmt.Errorf("devca: node certificate: %w", err)
	}
	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return Files{}, err
	}
	nodeKeyPEM, err := keyPEM(nodeKey)
	if err != nil {
		return Files{}, err
	}
	// The node file last: check reads it to tell a complete CA.
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CAKey, caKeyPEM, 0o600},
		{f.CA, certPEM(caDER), 0o644},
		{f.Node, append(nodeKeyPEM, certPEM(nodeDER)...), 0o600},
	} {
		if err := writeFile(w.path, w.data, w.mode); err != nil {
			return Files{}, err
		}
	}
	return f, f.check(now)
}

var errExpiring = errors.New("the node certificate expires within a day")

// check loads the node certificate and verifies it against the CA.
func (f Files) check(now time.Time) error {
	pair, err := tls.LoadX509KeyPair(f.Node, f.Node)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	pool, err := f.Pool()
	if err != nil {
		return err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(renewalMargin),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
		if invalid, ok := errors.AsType[x509.CertificateInvalidError](err); ok && invalid.Reason == x509.Expired {
			return errExpiring
		}
		return err
	}
	return nil
}

// Pool is the CA as a certificate pool.
func (f Files) Pool() (*x509.CertPool, error) {
	b, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", f.CA)
	}
	return pool, nil
}

// NodeTLS is a client TLS configuration that presents the node
// certificate and trusts the CA: what a tool acting as a node dials a
// mutual-TLS listener with.
func (f Files) NodeTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Node, f.Node)
	if err != nil {
		return nil, fmt.Errorf("devca: %w", err)
	}
	pool, err := f.Pool()
	if err != nil {
		return nil, fmt.Errorf("devca: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n.Add(n, big.NewInt(1))
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("devca: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeFile writes through a temporary file and a rename, so a node
// reading the file (its key store is read again when it changes) never
// sees half of it.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("devca: %w", err)
	}
	return nil
}
