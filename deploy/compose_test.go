package deploy

import (
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/config"
)

// composeFiles are the compose files the checks read: the plain
// cluster and the one secured with TLS and SCRAM.
var composeFiles = []string{composePath, composeSecurePath}

const (
	composePath       = "docker-compose.yml"
	composeSecurePath = "docker-compose.secure.yml"
	// composeBrokers is the size of the compose cluster: enough voters to
	// lose one, enough replicas for min.insync.replicas=2 with one down.
	composeBrokers = 3
	composeImage   = "skein:dev" // what build-image.sh tags by default
	// loopback is the only host address compose may publish on: these
	// are development clusters (the plain one has no authentication).
	loopback = "127.0.0.1"
)

// composeFile holds the parts of docker-compose.yml the checks read.
// Docker validates the full schema (TestComposeFileAcceptedByDocker).
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]any            `yaml:"networks"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	// Entrypoint and Command are set on one-shot tool services (the
	// secured file's create-admin), which run no broker.
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Hostname    string            `yaml:"hostname"`
	ReadOnly    bool              `yaml:"read_only"`
	Networks    []string          `yaml:"networks"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
}

// composeBroker is one service with the configuration its broker resolves.
type composeBroker struct {
	service string
	spec    composeService
	cfg     *config.Broker
	// published maps container ports to 127.0.0.1 host ports.
	published map[int]int
}

// loadCompose parses a compose file and resolves each broker service's
// configuration (the image's ENV, then the service's environment, as
// Docker merges them), failing on anything the broker would refuse.
// Services with their own entrypoint run a tool, not a broker.
func loadCompose(t *testing.T, path string) (composeFile, []composeBroker) {
	t.Helper()
	docs := yamlDocuments(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", path, len(docs))
	}
	var f composeFile
	// Not strict: compose has many fields these checks do not read.
	if err := docs[0].Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	imageEnv := dockerfileEnv(t)
	var brokers []composeBroker
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		svc := f.Services[name]
		if len(svc.Entrypoint) > 0 {
			continue
		}
		where := path + ": service " + name
		env := maps.Clone(imageEnv)
		for k, v := range svc.Environment {
			env[k] = composeUnescape(t, where, k, v)
		}
		cfg := resolveBroker(t, where, brokerProperties(t, where, env), composeHostname(svc))
		brokers = append(brokers, composeBroker{service: name, spec: svc, cfg: cfg, published: publishedPorts(t, where, svc.Ports)})
	}
	return f, brokers
}

// composeUnescape is a value as compose hands it to the container: $$ is
// a literal $. Interpolation of ${VARIABLE} is not used by these files,
// so a lone $ is a mistake.
func composeUnescape(t *testing.T, where, name, v string) string {
	t.Helper()
	if strings.Contains(strings.ReplaceAll(v, "$$", ""), "$") {
		t.Errorf("%s: %s=%q: a lone $ is compose interpolation; write $$ for a literal $", where, name, v)
	}
	return strings.ReplaceAll(v, "$$", "$")
}

// composeHostname is the host name a service's container gets: its
// hostname setting, else Docker's default, the short container id (shown
// here as a made-up one, so node.id.source=hostname-ordinal without a
// hostname setting fails as it would in Docker).
func composeHostname(svc composeService) string {
	if svc.Hostname != "" {
		return svc.Hostname
	}
	return "0123456789ab"
}

// publishedPorts parses "127.0.0.1:HOST:CONTAINER" entries; any other form
// (in particular one without the loopback address, which would publish on
// every interface) fails the test.
func publishedPorts(t *testing.T, where string, ports []string) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, p := range ports {
		parts := strings.Split(p, ":")
		if len(parts) != 3 || parts[0] != loopback {
			t.Errorf("%s: port %q: want %s:HOST:CONTAINER, so that only this host can connect", where, p, loopback)
			continue
		}
		host, err1 := strconv.Atoi(parts[1])
		container, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil {
			t.Errorf("%s: port %q: host and container ports must be numbers", where, p)
			continue
		}
		out[container] = host
	}
	return out
}

// namedVolumeAt returns the named volume mounted at path ("name:path").
func namedVolumeAt(volumes []string, path string) (string, bool) {
	for _, v := range volumes {
		name, target, _ := strings.Cut(v, ":")
		target, _, _ = strings.Cut(target, ":") // drop ":rw" and the like
		if target == path && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "/") {
			return name, true
		}
	}
	return "", false
}

func TestComposeServices(t *testing.T) {
	forEachCompose(t, func(t *testing.T, path string) {
		f, brokers := loadCompose(t, path)
		if len(brokers) != composeBrokers {
			t.Fatalf("%d services, want %d brokers", len(brokers), composeBrokers)
		}
		for _, b := range brokers {
			where := "service " + b.service
			if b.spec.Image != composeImage {
				t.Errorf("%s: image %q, want %q (built by build-image.sh)", where, b.spec.Image, composeImage)
			}
			if b.spec.Hostname != "" && b.spec.Hostname != b.service {
				t.Errorf("%s: hostname %q differs from the service name the other brokers dial", where, b.spec.Hostname)
			}
			if !b.spec.ReadOnly {
				t.Errorf("%s: read_only should be true: the broker writes only to its volume", where)
			}
			if !b.cfg.HasRole(config.RoleBroker) || !b.cfg.HasRole(config.RoleController) {
				t.Errorf("%s: process.roles %v, want broker and controller", where, b.cfg.Roles)
			}
			if len(b.spec.Networks) == 0 {
				t.Errorf("%s: on no network; the brokers must share the private one", where)
			}
			for _, n := range b.spec.Networks {
				if _, ok := f.Networks[n]; !ok {
					t.Errorf("%s: network %q is not declared under networks", where, n)
				}
			}
		}
	})
}

func TestComposeIdentityAndQuorum(t *testing.T) {
	forEachCompose(t, func(t *testing.T, path string) {
		_, brokers := loadCompose(t, path)
		first := brokers[0].cfg
		serviceByID := map[int32]string{}
		for _, b := range brokers {
			where := "service " + b.service
			if prev, dup := serviceByID[b.cfg.NodeID]; dup {
				t.Errorf("%s: node.id %d is also %s's", where, b.cfg.NodeID, prev)
			}
			serviceByID[b.cfg.NodeID] = b.service
			if b.cfg.ClusterID == "" || b.cfg.ClusterID != first.ClusterID {
				t.Errorf("%s: cluster.id %q, want the same non-empty id on every broker (%s has %q)",
					where, b.cfg.ClusterID, brokers[0].service, first.ClusterID)
			}
			if !slices.Equal(b.cfg.ControllerQuorumVoters, first.ControllerQuorumVoters) {
				t.Errorf("%s: controller.quorum.voters %v differ from %s's %v",
					where, b.cfg.ControllerQuorumVoters, brokers[0].service, first.ControllerQuorumVoters)
			}
		}
		if len(first.ControllerQuorumVoters) != len(brokers) {
			t.Errorf("%d voters, want one per broker (%d)", len(first.ControllerQuorumVoters), len(brokers))
		}
		for _, v := range first.ControllerQuorumVoters {
			svc, ok := serviceByID[v.ID]
			if !ok {
				t.Errorf("voter %s: no service has node.id %d", v, v.ID)
				continue
			}
			if v.Host != svc {
				t.Errorf("voter %s: host %q, want the service name %q of node %d", v, v.Host, svc, v.ID)
			}
			for _, b := range brokers {
				if b.service == svc {
					if ctl := controllerListener(t, svc, b.cfg); ctl.Port != v.Port {
						t.Errorf("voter %s: port %d, but %s's controller listener is %s", v, v.Port, svc, ctl)
					}
				}
			}
		}
	})
}

func TestComposeListenersAndPorts(t *testing.T) {
	forEachCompose(t, func(t *testing.T, path string) {
		_, brokers := loadCompose(t, path)
		hostPortOwner := map[int]string{}
		for _, b := range brokers {
			where := "service " + b.service
			for container, host := range b.published {
				if owner, dup := hostPortOwner[host]; dup {
					t.Errorf("%s: host port %d is also published by %s", where, host, owner)
				}
				hostPortOwner[host] = b.service
				if !slices.ContainsFunc(b.cfg.Listeners, func(l config.Listener) bool { return l.Port == container }) &&
					!slices.ContainsFunc(b.cfg.AdminListeners, func(a config.AdminListener) bool { return a.Port == container }) {
					t.Errorf("%s: publishes container port %d, on which nothing listens", where, container)
				}
			}
			for _, a := range b.cfg.AdvertisedListeners {
				l, _ := listenerNamed(b.cfg.Listeners, a.Name) // config guarantees it exists
				if a.Name == b.cfg.InterBrokerListenerName {
					// Other brokers and containers dial it across the network.
					if a.Host != b.service || a.Port != l.Port {
						t.Errorf("%s: advertises %s, want %s://%s:%d (its service name and listener port)", where, a, a.Name, b.service, l.Port)
					}
					continue
				}
				// Any other listener is for clients on the host: advertised
				// at the host port that reaches it.
				if host, ok := b.published[l.Port]; !ok || a.Host != loopback || a.Port != host {
					t.Errorf("%s: advertises %s, but listener %s is published as %s:%d", where, a, l, loopback, host)
				}
			}
			if len(b.cfg.AdvertisedListeners) < 2 {
				t.Errorf("%s: advertises %v; want an inter-broker and a host-facing listener", where, b.cfg.AdvertisedListeners)
			}
			if len(b.cfg.AdminListeners) == 0 {
				t.Errorf("%s: no admin.listeners, so no /metrics", where)
			}
			for _, a := range b.cfg.AdminListeners {
				if _, ok := b.published[a.Port]; !ok {
					t.Errorf("%s: admin listener %s is not published to the host", where, a.Addr())
				}
			}
		}
	})
}

func TestComposeStorageAndReplication(t *testing.T) {
	forEachCompose(t, func(t *testing.T, path string) {
		f, brokers := loadCompose(t, path)
		volumeOwner := map[string]string{}
		for _, b := range brokers {
			where := "service " + b.service
			for _, dir := range b.cfg.LogDirs {
				vol, ok := namedVolumeAt(b.spec.Volumes, dir)
				if !ok {
					t.Errorf("%s: log dir %s is not a named volume; the data would go with the container", where, dir)
					continue
				}
				if _, declared := f.Volumes[vol]; !declared {
					t.Errorf("%s: volume %q is not declared under volumes", where, vol)
				}
				if owner, dup := volumeOwner[vol]; dup {
					t.Errorf("%s: volume %q is also %s's; each broker needs its own", where, vol, owner)
				}
				volumeOwner[vol] = b.service
			}
			n := len(brokers)
			checks := []struct {
				property  string
				got, want int
			}{
				{"default.replication.factor", int(b.cfg.DefaultReplicationFactor), n},
				{"offsets.topic.replication.factor", int(b.cfg.OffsetsTopicReplicationFactor), n},
				// One broker may be down and acks=all still needs two copies.
				{"min.insync.replicas", int(b.cfg.MinInsyncReplicas), n - 1},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: %s=%d, want %d", where, c.property, c.got, c.want)
				}
			}
		}
	})
}

// forEachCompose runs check on every compose file.
func forEachCompose(t *testing.T, check func(t *testing.T, path string)) {
	for _, path := range composeFiles {
		t.Run(path, func(t *testing.T) { check(t, path) })
	}
}

// composeCommand returns how to run Docker Compose here: the v2 plugin
// ("docker compose") or the v1 program ("docker-compose"), or nil.
func composeCommand() []string {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	return nil
}

// TestComposeFileAcceptedByDocker asks compose itself to validate the file
// against its schema, which the typed checks above do not cover.
func TestComposeFileAcceptedByDocker(t *testing.T) {
	compose := composeCommand()
	if compose == nil {
		t.Skip("neither docker compose nor docker-compose is installed")
	}
	forEachCompose(t, func(t *testing.T, path string) {
		args := append(slices.Clone(compose[1:]), "-f", path, "config", "-q")
		out, err := exec.Command(compose[0], args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(append(compose, args...), " "), err, out)
		}
	})
}
