// Package deploy holds no code, only tests of the deployment files next to
// them: docker-compose.yml and kubernetes/. They parse the files and check
// every broker property against internal/config, so that a renamed property
// or a port changed in one place but not the others fails here rather than
// as a broker that refuses to start or a cluster whose nodes cannot meet.
package deploy

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/config"
)

// brokerProperties turns the SKEIN_* variables of env into broker
// properties exactly as config.Load does, checking each name and value.
// Other variables are left out. where names the file and service in errors.
func brokerProperties(t *testing.T, where string, env map[string]string) map[string]string {
	t.Helper()
	props := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		rest, ok := strings.CutPrefix(name, config.EnvPrefix)
		if !ok {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(rest, "_", "."))
		if canonical := config.EnvName(key); canonical != name {
			t.Errorf("%s: %s should be spelled %s", where, name, canonical)
		}
		checkProperty(t, where, name, key, env[name])
		props[key] = env[name]
	}
	return props
}

// checkProperty fails the test unless key is a broker property that
// accepts value and does something.
func checkProperty(t *testing.T, where, envName, key, value string) {
	t.Helper()
	p, ok := config.LookupBroker(key)
	if !ok {
		t.Errorf("%s: %s sets %q, which is not a broker property (see docs/configuration.md); the broker would refuse to start",
			where, envName, key)
		return
	}
	if p.Ignored {
		t.Errorf("%s: %s sets %s, which Skein accepts only for Kafka compatibility and ignores", where, envName, key)
	}
	if reason, ok := p.Validate(value); !ok {
		t.Errorf("%s: %s=%q: %s must be %s", where, envName, value, key, reason)
	}
}

// resolveBroker builds the configuration the broker would run with on the
// machine called hostname (read by node.id.source=hostname-ordinal),
// applying every cross-property rule; a refusal fails the test.
func resolveBroker(t *testing.T, where string, props map[string]string, hostname string) *config.Broker {
	t.Helper()
	b, err := config.NewBroker(props, config.WithHostname(hostname))
	if err != nil {
		t.Fatalf("%s: the broker would refuse this configuration: %v", where, err)
	}
	return b
}

// listenerNamed returns the listener called name in ls.
func listenerNamed(ls []config.Listener, name string) (config.Listener, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l, true
		}
	}
	return config.Listener{}, false
}

// controllerListener returns the listener quorum traffic uses: the first of
// controller.listener.names.
func controllerListener(t *testing.T, where string, b *config.Broker) config.Listener {
	t.Helper()
	l, ok := b.ControllerListener()
	if !ok {
		t.Fatalf("%s: no controller listener among %v", where, b.Listeners)
	}
	return l
}

// dockerfileEnv returns the ENV settings of deploy/Dockerfile ("ENV K=V"
// form only, which is what it uses), the defaults every container starts
// with.
func dockerfileEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range strings.Split(readFile(t, "Dockerfile"), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV ")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(rest), "=")
		if !ok {
			t.Fatalf("Dockerfile: %q: expected ENV KEY=value", line)
		}
		env[k] = v
	}
	return env
}

func TestDockerfileEnvIsBrokerProperties(t *testing.T) {
	env := dockerfileEnv(t)
	if len(env) == 0 {
		t.Fatal("Dockerfile sets no ENV; expected at least SKEIN_LOG_DIRS")
	}
	brokerProperties(t, "Dockerfile", env)
}
