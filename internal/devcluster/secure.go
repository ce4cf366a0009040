package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skein-log/skein/internal/devca"
)

// Secure makes a cluster's traffic encrypted and authenticated
// (`skein dev --secure`): clients log in with SCRAM-SHA-512 over TLS on
// the client port (a SASL_SSL listener), nodes talk to each other over
// mutual TLS (the INTERNAL inter-broker listener on the Internal port and
// the CONTROLLER listener) with the CA's node certificate, whose principal
// User:skein-node is a super user, and the StandardAuthorizer refuses
// what no ACL allows.
type Secure struct {
	CA devca.Files
	// Users are the SCRAM users SetUpUsers creates, name to password.
	Users map[string]string
}

// Users of a secure dev cluster: admin is a super user, alice may do
// anything on topics and groups through ACLs (not on the cluster).
const (
	AdminUser = "admin"
	AliceUser = "alice"
)

// scramIterations is what the dev users' credentials are salted with.
const scramIterations = 8192

// PrepareSecure makes (or reuses) the CA in dir/tls and the users'
// passwords, kept in dir/client-NAME.properties (a Kafka client
// properties file for each user) so a restarted cluster keeps them.
func PrepareSecure(dir string, ca devca.Files) (*Secure, error) {
	s := &Secure{CA: ca, Users: map[string]string{}}
	for _, user := range []string{AdminUser, AliceUser} {
		path := s.PropertiesFile(dir, user)
		pass, err := passwordIn(path)
		if errors.Is(err, fs.ErrNotExist) {
			pass, err = newPassword()
			if err == nil {
				err = os.WriteFile(path, []byte(s.ClientProperties(user, pass)), 0o600)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("devcluster: %s's password: %w", user, err)
		}
		s.Users[user] = pass
	}
	return s, nil
}

// PropertiesFile is where user's client properties are kept.
func (s *Secure) PropertiesFile(dir, user string) string {
	return filepath.Join(dir, "client-"+user+".properties")
}

// ClientProperties are the Kafka client properties user logs in with:
// for `skein --command-config`, Kafka's tools and librdkafka's
// (sasl.username / sasl.password) alike.
func (s *Secure) ClientProperties(user, password string) string {
	return "security.protocol=SASL_SSL\n" +
		"sasl.mechanism=SCRAM-SHA-512\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + "\";\n" +
		"ssl.truststore.type=PEM\n" +
		"ssl.truststore.location=" + s.CA.CA + "\n"
}

var jaasPassword = regexp.MustCompile(`password="([^"]*)"`)

func passwordIn(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := jaasPassword.FindSubmatch(b)
	if m == nil || len(m[1]) == 0 {
		return "", fmt.Errorf("%s has no sasl.jaas.config password (remove it to make a new one)", path)
	}
	return string(m[1]), nil
}

func newPassword() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// secureProps are the security properties of node i.
func (c *Cluster) secureProps(i int) map[string]string {
	ports := c.cfg.Ports(i)
	var listeners []string
	if c.isBroker(i) {
		listeners = append(listeners, fmt.Sprintf("SASL_SSL://127.0.0.1:%d", ports.Client), fmt.Sprintf("INTERNAL://127.0.0.1:%d", ports.Internal))
	}
	if c.isController(i) {
		listeners = append(listeners, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ports.Controller))
	}
	props := map[string]string{
		"listeners":                      strings.Join(listeners, ","),
		"listener.security.protocol.map": "SASL_SSL:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          c.cfg.Secure.CA.Node,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        c.cfg.Secure.CA.CA,
		// Nodes present the CA's certificate; clients log in with SCRAM.
		"listener.name.controller.ssl.client.auth": "required",
		"ssl.principal.mapping.rules":              `RULE:^CN=([^,]*)$/$1/,DEFAULT`,
		"sasl.enabled.mechanisms":                  "SCRAM-SHA-512,SCRAM-SHA-256",
		"authorizer.class.name":                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                              "User:" + devca.NodeName + ";User:" + AdminUser,
		"allow.everyone.if.no.acl.found":           "false",
	}
	if c.isBroker(i) {
		props["inter.broker.listener.name"] = "INTERNAL"
		props["listener.name.internal.ssl.client.auth"] = "required"
	}
	return props
}

// InternalAddrs are the brokers' INTERNAL (mutual TLS) addresses, which
// the cluster's own client uses as a node would.
func (c *Cluster) InternalAddrs() []string {
	out := make([]string, c.cfg.Brokers)
	for i := range out {
		out[i] = "127.0.0.1:" + strconv.Itoa(c.cfg.Ports(i).Internal)
	}
	return out
}

// SetUpUsers creates the SCRAM users (again: an existing credential is
// replaced by the same password) and alice's ACLs, then waits until every
// broker lets admin log in on its client port, i.e. has applied the
// credential records.
func (c *Cluster) SetUpUsers(ctx context.Context) error {
	s := c.cfg.Secure
	cl, err := c.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var ups []kadm.UpsertSCRAM
	for _, user := range []string{AdminUser, AliceUser} {
		ups = append(ups, kadm.UpsertSCRAM{User: user, Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: s.Users[user]})
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, ups)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create the SCRAM users: %w", err)
	}
	acls := kadm.NewACLs().Allow("User:" + AliceUser).AllowHosts("*").Topics("*").Groups("*").
		Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral)
	created, err := adm.CreateACLs(ctx, acls)
	if err == nil {
		for _, r := range created {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		return fmt.Errorf("create alice's ACLs: %w", err)
	}
	for i, addr := range c.Addrs() {
		err := WaitFor(ctx, fmt.Sprintf("broker %d to accept the SCRAM users", i+1), func() bool {
			return c.loginWorks(ctx, addr, AdminUser) == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// loginWorks logs user in on one broker's client port.
func (c *Cluster) loginWorks(ctx context.Context, addr, user string) error {
	tlsCfg, err := c.cfg.Secure.CA.NodeTLS()
	if err != nil {
		return err
	}
	tlsCfg.Certificates = nil // a client of the SASL_SSL listener, not a node
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg), kgo.RequestRetries(0),
		kgo.SASL(scram.Auth{User: user, Pass: c.cfg.Secure.Users[user]}.AsSha512Mechanism()))
	if err != nil {
		return err
	}
	defer cl.Close()
	attempt, cancel := context.WithTimeout(ctx, readyAttempt)
	defer cancel()
	return cl.Ping(attempt)
}
