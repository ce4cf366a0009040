package devcluster

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
