package deploy

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/principalmap"
)

// makeCertsPath makes what the secured compose file mounts.
const makeCertsPath = "secure/make-certs.sh"

// TestComposeSecureListeners: in docker-compose.secure.yml no listener is
// plaintext; the nodes' own listeners need client certificates and the
// certificate make-certs.sh issues maps to a super user and names every
// broker host; clients on the host log in with SCRAM over TLS; the
// authorizer is on; the TLS files are where the mounted directory puts them.
func TestComposeSecureListeners(t *testing.T) {
	f, brokers := loadCompose(t, composeSecurePath)
	script := readFile(t, makeCertsPath)
	cn := nodeCertCN(t)
	for _, b := range brokers {
		where := composeSecurePath + ": service " + b.service
		if !strings.Contains(script, "DNS:"+b.service) {
			t.Errorf("%s: the certificate of %s does not name %s, which the other nodes dial", where, makeCertsPath, b.service)
		}
		mount, ok := mountTarget(b.spec.Volumes, "./secure/generated")
		if !ok {
			t.Errorf("%s: does not mount ./secure/generated, where %s writes the certificates", where, makeCertsPath)
		}
		checkSecuredListeners(t, where, b.cfg, mount, cn)
	}

	admin, ok := f.Services["create-admin"]
	if !ok {
		t.Fatalf("%s: no create-admin service", composeSecurePath)
	}
	flag := func(name string) string {
		i := slices.Index(admin.Command, name)
		if i < 0 || i+1 >= len(admin.Command) {
			t.Fatalf("%s: create-admin's command has no %s", composeSecurePath, name)
		}
		return admin.Command[i+1]
	}
	mount, _ := mountTarget(admin.Volumes, "./secure/generated")
	for _, file := range []string{flag("--command-config"), flag("--password-file")} {
		if mount == "" || !strings.HasPrefix(file, mount+"/") {
			t.Errorf("create-admin reads %s, outside its mounted ./secure/generated", file)
		}
	}
	for _, addr := range strings.Split(flag("--bootstrap-server"), ",") {
		if !slices.ContainsFunc(brokers, func(b composeBroker) bool {
			return slices.ContainsFunc(b.cfg.AdvertisedListeners, func(a config.Listener) bool {
				return a.Name == b.cfg.InterBrokerListenerName && a.String() == a.Name+"://"+addr
			})
		}) {
			t.Errorf("create-admin dials %s, which is no broker's INTERNAL listener", addr)
		}
	}
	user := "User:" + flag("--name")
	for _, b := range brokers {
		if !b.cfg.SuperUsers[authz.Principal{Type: "User", Name: flag("--name")}] {
			t.Errorf("service %s: %s, whom create-admin makes, is not in super.users", b.service, user)
		}
	}
	if !strings.Contains(script, "node.properties") || !strings.Contains(script, "admin.password") {
		t.Errorf("%s does not write the node.properties and admin.password create-admin reads", makeCertsPath)
	}
}

// mountTarget is where a bind mount of source lands in the container.
func mountTarget(volumes []string, source string) (string, bool) {
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[0] == source {
			return parts[1], true
		}
	}
	return "", false
}

// checkSecuredListeners checks one broker of a secured example: the
// authorizer on, no listener plaintext, the nodes' own listeners SSL with
// client certificates required, from files under mount, the node
// certificate's CN mapped to a super user, and every other listener
// SASL_SSL with SCRAM-SHA-512, which it returns (the clients' listeners).
func checkSecuredListeners(t *testing.T, where string, cfg *config.Broker, mount, cn string) (clients []config.Listener) {
	t.Helper()
	if cfg.Authorizer == "" {
		t.Errorf("%s: no authorizer.class.name", where)
	}
	for _, l := range cfg.Listeners {
		switch {
		case l.SecurityProtocol == config.ProtocolPlaintext:
			t.Errorf("%s: listener %s is PLAINTEXT", where, l.Name)
		case l.Name == cfg.InterBrokerListenerName || cfg.IsControllerListener(l.Name):
			set, _ := cfg.TLSOf(l.Name)
			if l.SecurityProtocol != config.ProtocolSSL || set.ClientAuth != "required" {
				t.Errorf("%s: the nodes' listener %s is %s with ssl.client.auth=%s, want SSL with client certificates required",
					where, l.Name, l.SecurityProtocol, set.ClientAuth)
			}
			for _, file := range []string{set.KeystoreLocation, set.TruststoreLocation} {
				if mount == "" || !strings.HasPrefix(file, mount+"/") {
					t.Errorf("%s: %s reads %s, outside the mounted %q", where, l.Name, file, mount)
				}
			}
			name, err := principalmap.MapPrincipal(set.PrincipalMapping, "CN="+cn)
			if err != nil || !cfg.SuperUsers[authz.Principal{Type: "User", Name: name}] {
				t.Errorf("%s: the nodes' certificate CN=%s is User:%s (%v), not in super.users", where, cn, name, err)
			}
		default:
			if set, ok := cfg.SASLOf(l.Name); !ok || l.SecurityProtocol != config.ProtocolSASLSSL || !slices.Contains(set.Mechanisms, "SCRAM-SHA-512") {
				t.Errorf("%s: client listener %s is %s, want SASL_SSL with SCRAM-SHA-512", where, l.Name, l.SecurityProtocol)
			}
			clients = append(clients, l)
		}
	}
	return clients
}

// nodeCertCN is the common name of the certificate make-certs.sh issues.
func nodeCertCN(t *testing.T) string {
	t.Helper()
	cn := regexp.MustCompile(`-subj /CN=([^ ]+)`).FindStringSubmatch(readFile(t, makeCertsPath))
	if cn == nil {
		t.Fatalf("%s: no node certificate subject (-subj /CN=...)", makeCertsPath)
	}
	return cn[1]
}
