package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/sasl"
)

// clusterFlags are how a client command reaches the cluster: the
// bootstrap list and, as Kafka's tools take it, --command-config, a file
// of client properties (security.protocol, ssl.*, sasl.*).
type clusterFlags struct {
	bootstrap     string
	commandConfig string
}

// clusterFlag registers --bootstrap-server (and -b) and --command-config.
func clusterFlag(fs *flag.FlagSet) *clusterFlags {
	c := &clusterFlags{bootstrap: "127.0.0.1:9092"}
	fs.StringVar(&c.bootstrap, "bootstrap-server", c.bootstrap, "comma-separated host:port list of brokers")
	fs.StringVar(&c.bootstrap, "b", c.bootstrap, "short for --bootstrap-server")
	fs.StringVar(&c.commandConfig, "command-config", "", "Kafka client properties file: security.protocol, ssl.truststore.location, ssl.keystore.location, sasl.mechanism, sasl.jaas.config (or sasl.username/sasl.password)")
	return c
}

// String is the bootstrap list, for messages.
func (c *clusterFlags) String() string { return c.bootstrap }

func (c *clusterFlags) seeds() []string { return splitList(c.bootstrap) }

// opts are the client options to reach the cluster: its seeds and the
// security --command-config asks for.
func (c *clusterFlags) opts() ([]kgo.Opt, error) {
	seeds := c.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
	if c.commandConfig == "" {
		return opts, nil
	}
	props, err := config.ReadClientProperties(c.commandConfig)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	sec, err := securityOpts(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", c.commandConfig, err)
	}
	return append(opts, sec...), nil
}

// securityOpts turns Kafka client security properties into franz-go
// options. Other properties (client.id, ...) are left to the command's
// own flags and ignored here, as Kafka's tools ignore what they do not use.
func securityOpts(props map[string]string) ([]kgo.Opt, error) {
	protocol := strings.ToUpper(props["security.protocol"])
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL":
		cfg, err := clientTLS(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if strings.HasPrefix(protocol, "SASL_") {
		m, err := clientSASL(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func clientTLS(props map[string]string) (*tls.Config, error) {
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := props[k]; t != "" && !strings.EqualFold(t, "PEM") {
			return nil, fmt.Errorf("%s %q: only PEM files are read", k, t)
		}
	}
	if props["ssl.key.password"] != "" || props["ssl.keystore.password"] != "" {
		return nil, errors.New("ssl.key.password: encrypted keys are not read; use an unencrypted PEM key protected by its file mode")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if path := props["ssl.truststore.location"]; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("ssl.truststore.location %s: no PEM certificate", path)
		}
	}
	if path := props["ssl.keystore.location"]; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		cert, err := tls.X509KeyPair(data, data)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location %s: %w", path, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch alg := props["ssl.endpoint.identification.algorithm"]; {
	case alg == "" && hasKey(props, "ssl.endpoint.identification.algorithm"):
		// Kafka's way to trust the chain without checking the host name.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	case alg == "", strings.EqualFold(alg, "https"):
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %q: want https or empty", alg)
	}
	return cfg, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// verifyChain checks a server's chain against roots (nil: the system's)
// without matching its name.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("the server sent no certificate")
	}
	var certs []*x509.Certificate
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

func clientSASL(props map[string]string) (ksasl.Mechanism, error) {
	user, pass := props["sasl.username"], props["sasl.password"]
	if text := props["sasl.jaas.config"]; text != "" {
		j, err := sasl.ParseJAAS(text)
		if err != nil {
			return nil, err
		}
		user, pass = j.Options["username"], j.Options["password"]
	}
	if user == "" {
		return nil, errors.New("a SASL protocol needs sasl.jaas.config (username=... password=...) or sasl.username and sasl.password")
	}
	mech := strings.ToUpper(props["sasl.mechanism"])
	switch mech {
	case "", "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", props["sasl.mechanism"])
}
