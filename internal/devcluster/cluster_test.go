package devcluster

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/devca"
	"github.com/skein-log/skein/internal/testport"
)

func TestPropsCombinedAndDedicatedControllers(t *testing.T) {
	c, err := New(Config{Bin: "skein", Dir: "/data", Brokers: 3, Ports: BasePorts(9092)})
	if err != nil {
		t.Fatal(err)
	}
	p := c.props(1)
	for k, want := range map[string]string{
		"node.id": "2", "process.roles": "broker,controller", "cluster.id": "skein-dev",
		"listeners":                "PLAINTEXT://127.0.0.1:9192,CONTROLLER://127.0.0.1:9193",
		"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293",
		"admin.listeners":          "http://127.0.0.1:9194", "log.dirs": filepath.Join("/data", "broker-2"),
		"default.replication.factor": "3", "min.insync.replicas": "2",
	} {
		if p[k] != want {
			t.Errorf("%s = %q, want %q", k, p[k], want)
		}
	}
	if got := strings.Join(c.AdminAddrs(), ","); got != "127.0.0.1:9094,127.0.0.1:9194,127.0.0.1:9294" {
		t.Errorf("admin addresses %s", got)
	}

	c, err = New(Config{Bin: "skein", Dir: "/data", Brokers: 2, Controllers: 1, Ports: BasePorts(9092),
		Props: map[string]string{"log.level": "debug"}, NodeProps: func(i int) map[string]string {
			return map[string]string{"x": strconv.Itoa(i)}
		}})
	if err != nil {
		t.Fatal(err)
	}
	broker, ctrl := c.props(0), c.props(2)
	if broker["process.roles"] != "broker" || broker["listeners"] != "PLAINTEXT://127.0.0.1:9092" || broker["controller.quorum.voters"] != "3@127.0.0.1:9293" {
		t.Errorf("broker-only node: %v", broker)
	}
	if ctrl["process.roles"] != "controller" || ctrl["listeners"] != "CONTROLLER://127.0.0.1:9293" || ctrl["admin.listeners"] != "" || c.Name(2) != "controller 3" {
		t.Errorf("controller-only node: %v", ctrl)
	}
	if broker["log.level"] != "debug" || ctrl["x"] != "2" {
		t.Errorf("overrides not applied: %v %v", broker, ctrl)
	}
	if len(c.Addrs()) != 2 {
		t.Errorf("a controller-only node has a client address: %v", c.Addrs())
	}
}

func TestCheckPortsNamesTheNodeAndPort(t *testing.T) {
	base := testport.Block(t, []int{0, 1, 2, 100, 101, 102}, testport.FreeOn("127.0.0.1"))
	c, err := New(Config{Bin: "skein", Dir: t.TempDir(), Brokers: 2, Ports: BasePorts(base)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckPorts(); err != nil {
		t.Fatalf("free ports refused: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+101))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = c.CheckPorts()
	if err == nil || !strings.Contains(err.Error(), "broker 2 cannot start: port 127.0.0.1:"+strconv.Itoa(base+101)+" is in use") {
		t.Fatalf("taken controller port: %v", err)
	}
}

// TestSecureProps: a Secure cluster's nodes serve clients SASL_SSL on the
// client port and each other mutual TLS on the Internal and controller
// ports, with the node certificate a super user; the users' properties
// survive a second PrepareSecure on the same data.
func TestSecureProps(t *testing.T) {
	dir := t.TempDir()
	ca, err := devca.Ensure(filepath.Join(dir, "tls"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sec, err := PrepareSecure(dir, ca)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Bin: "skein", Dir: dir, Brokers: 3, Ports: BasePorts(9092), Secure: sec})
	if err != nil {
		t.Fatal(err)
	}
	p := c.props(1)
	for k, want := range map[string]string{
		"listeners":                              "SASL_SSL://127.0.0.1:9192,INTERNAL://127.0.0.1:9195,CONTROLLER://127.0.0.1:9193",
		"listener.security.protocol.map":         "SASL_SSL:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL",
		"inter.broker.listener.name":             "INTERNAL",
		"listener.name.internal.ssl.client.auth": "required",
		"super.users":                            "User:skein-node;User:admin",
		"ssl.keystore.location":                  ca.Node,
	} {
		if p[k] != want {
			t.Errorf("%s = %q, want %q", k, p[k], want)
		}
	}
	if got := strings.Join(c.InternalAddrs(), ","); got != "127.0.0.1:9095,127.0.0.1:9195,127.0.0.1:9295" {
		t.Errorf("internal addresses %s", got)
	}
	props, err := os.ReadFile(sec.PropertiesFile(dir, AliceUser))
	if err != nil || !strings.Contains(string(props), `username="alice" password="`+sec.Users[AliceUser]+`"`) {
		t.Fatalf("alice's properties: %v\n%s", err, props)
	}
	again, err := PrepareSecure(dir, ca)
	if err != nil || again.Users[AliceUser] != sec.Users[AliceUser] || again.Users[AdminUser] != sec.Users[AdminUser] {
		t.Fatalf("a second run changed the passwords: %v", err)
	}
}

// A node's environment gives it its share of this process's Ps, at
// least one, unless the caller set GOMAXPROCS: then it passes unchanged.
func TestEnvSharesTheCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	procs := func(env []string) []string {
		var out []string
		for _, kv := range env {
			if strings.HasPrefix(kv, "GOMAXPROCS=") {
				out = append(out, kv)
			}
		}
		return out
	}
	for _, tc := range []struct {
		brokers, controllers int
		want                 string
	}{
		{1, 0, "GOMAXPROCS=8"},
		{3, 0, "GOMAXPROCS=2"},
		{3, 2, "GOMAXPROCS=1"},
		{9, 0, "GOMAXPROCS=1"},
	} {
		c, err := New(Config{Bin: "skein", Dir: t.TempDir(), Brokers: tc.brokers, Controllers: tc.controllers, Ports: BasePorts(9092)})
		if err != nil {
			t.Fatal(err)
		}
		if got := procs(c.env()); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%d brokers, %d controllers: %v, want [%s]", tc.brokers, tc.controllers, got, tc.want)
		}
	}
	t.Setenv("GOMAXPROCS", "5")
	c, err := New(Config{Bin: "skein", Dir: t.TempDir(), Brokers: 3, Ports: BasePorts(9092)})
	if err != nil {
		t.Fatal(err)
	}
	if got := procs(c.env()); len(got) != 1 || got[0] != "GOMAXPROCS=5" {
		t.Errorf("with GOMAXPROCS=5 set: %v, want it unchanged", got)
	}
}
