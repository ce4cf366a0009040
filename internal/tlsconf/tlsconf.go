// Package tlsconf turns a listener's ssl.* settings into a crypto/tls
// server configuration, and reads its PEM files again when they change so
// that a renewed certificate is used without a restart.
package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/config"
)

// Server holds one TLS listener's configuration. Its Config asks for the
// current one on every handshake (GetConfigForClient), which looks at the
// key and trust store files' modification times and reads them again when
// they changed: no goroutine, and a handshake costs two stat calls.
type Server struct {
	set config.ListenerTLS
	// onReload reports a reload, or its failure (the previous files stay
	// in use); it may be nil.
	onReload func(err error)

	mu      sync.Mutex
	stamp   [2]fileStamp
	current *tls.Config
}

// fileStamp identifies a version of a file cheaply.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewServer reads the key store and trust store once; an unreadable or
// invalid one is an error here, so a broker with a bad certificate does not
// start. onReload is told of each later reload.
func NewServer(set config.ListenerTLS, onReload func(err error)) (*Server, error) {
	s := &Server{set: set, onReload: onReload}
	s.stamp = s.stamps()
	cfg, err := build(set)
	if err != nil {
		return nil, err
	}
	s.current = cfg
	return s, nil
}

// Config is the configuration to hand tls.Server.
func (s *Server) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return s.Current(), nil
	}}
}

// Current returns the configuration of the files as they are now.
func (s *Server) Current() *tls.Config {
	stamp := s.stamps()
	s.mu.Lock()
	defer s.mu.Unlock()
	if stamp == s.stamp {
		return s.current
	}
	// Remember the stamp even when the new files are bad, so that a bad
	// file is reported once, not on every handshake until it is fixed.
	s.stamp = stamp
	cfg, err := build(s.set)
	if err == nil {
		s.current = cfg
	}
	if s.onReload != nil {
		s.onReload(err)
	}
	return s.current
}

func (s *Server) stamps() [2]fileStamp {
	return [2]fileStamp{stampOf(s.set.KeystoreLocation), stampOf(s.set.TruststoreLocation)}
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{size: -1}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// build makes a server configuration from the settings.
func build(set config.ListenerTLS) (*tls.Config, error) {
	cert, err := loadKeyPair(set)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if err := setProtocols(cfg, set); err != nil {
		return nil, err
	}
	if len(set.CipherSuites) > 0 && len(cfg.CipherSuites) == 0 && cfg.MinVersion < tls.VersionTLS13 {
		return nil, errors.New("ssl.cipher.suites names TLS 1.3 suites only while ssl.enabled.protocols allows TLSv1.2: list a TLS 1.2 suite or enable TLSv1.3 only")
	}
	switch set.ClientAuth {
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.NoClientCert
	}
	if set.TruststoreLocation != "" || set.TruststoreCertificates != "" {
		pool, err := loadTrust(set)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
	}
	return cfg, nil
}

// loadKeyPair reads the key and chain from ssl.keystore.location (one PEM
// file with both) or from the inline properties.
func loadKeyPair(set config.ListenerTLS) (tls.Certificate, error) {
	source := "ssl.keystore.certificate.chain and ssl.keystore.key"
	certPEM, keyPEM := []byte(set.KeystoreCertificateChain), []byte(set.KeystoreKey)
	if set.KeystoreLocation != "" {
		source = "ssl.keystore.location " + set.KeystoreLocation
		data, err := os.ReadFile(set.KeystoreLocation)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("reading %s: %w", source, err)
		}
		certPEM, keyPEM = data, data
	}
	if bytes.Contains(keyPEM, []byte("ENCRYPTED PRIVATE KEY")) || bytes.Contains(keyPEM, []byte("Proc-Type: 4,ENCRYPTED")) {
		return tls.Certificate{}, fmt.Errorf("%s: the private key is encrypted; Skein reads unencrypted keys only (protect the file by its permissions)", source)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls's message names no secret, only what is missing.
		return tls.Certificate{}, fmt.Errorf("%s: %w", source, err)
	}
	return cert, nil
}

func loadTrust(set config.ListenerTLS) (*x509.CertPool, error) {
	source := "ssl.truststore.certificates"
	data := []byte(set.TruststoreCertificates)
	if set.TruststoreLocation != "" {
		source = "ssl.truststore.location " + set.TruststoreLocation
		var err error
		if data, err = os.ReadFile(set.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("reading %s: %w", source, err)
		}
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", source, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", source)
	}
	return pool, nil
}

// versions maps ssl.enabled.protocols to Go's range.
func versions(protocols []string) (lo, hi uint16, err error) {
	has := map[string]bool{}
	for _, p := range protocols {
		has[p] = true
	}
	switch {
	case has["TLSv1.2"] && has["TLSv1.3"]:
		return tls.VersionTLS12, tls.VersionTLS13, nil
	case has["TLSv1.3"]:
		return tls.VersionTLS13, tls.VersionTLS13, nil
	case has["TLSv1.2"]:
		return tls.VersionTLS12, tls.VersionTLS12, nil
	}
	return 0, 0, fmt.Errorf("ssl.enabled.protocols %q: no TLS version Skein offers", strings.Join(protocols, ","))
}

// ClientConfig is the configuration a node dials another node's TLS
// listener with: the listener's key store is the client certificate
// (mutual TLS) and its trust store verifies the peer, whose certificate
// must name serverName (Kafka's default endpoint identification, https).
// It reads the files on each call, so a renewed certificate is used from
// the next connection on.
func ClientConfig(set config.ListenerTLS, serverName string) (*tls.Config, error) {
	cert, err := loadKeyPair(set)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, ServerName: serverName}
	if err := setProtocols(cfg, set); err != nil {
		return nil, err
	}
	if set.TruststoreLocation != "" || set.TruststoreCertificates != "" {
		if cfg.RootCAs, err = loadTrust(set); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// setProtocols applies ssl.enabled.protocols and ssl.cipher.suites, the
// same on both ends of a connection.
func setProtocols(cfg *tls.Config, set config.ListenerTLS) error {
	var err error
	if cfg.MinVersion, cfg.MaxVersion, err = versions(set.EnabledProtocols); err != nil {
		return err
	}
	for _, name := range set.CipherSuites {
		if id, ok := config.CipherSuiteID(name); ok {
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	return nil
}
