package chaos

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/devcluster"
	"github.com/skein-log/skein/internal/faultnet"
)

// The local verify cluster's network. Every connection between nodes and
// from clients to nodes passes a fault proxy:
//
//   - node i (0-based) listens on its own loopback address 127.0.1.(i+1),
//     and binds its connections to other nodes to that address
//     (outbound.bind.address), so a proxy knows which node dialled it;
//   - the proxies listen where the cluster is known to be,
//     127.0.0.1:<client port> and 127.0.0.1:<controller port>: the nodes
//     advertise those, and controller.quorum.voters names them;
//   - producer p dials from 127.0.2.p, consumer c from 127.0.3.c (its
//     reader of the chain's output too) and the chain's transformer x
//     from 127.0.4.x, so a fault can cut one client off; anything else (the nemesis's own
//     metadata look-ups, admin clients) comes from 127.0.0.1 and is never
//     cut.
//
// Linux routes all of 127.0.0.0/8 to the loopback interface; that is what
// makes one machine a network of hosts.
const (
	nodeNet     = "127.0.1."
	producerNet = "127.0.2."
	consumerNet = "127.0.3."
	// transformerNet: the txn workload chain's transformers.
	transformerNet = "127.0.4."
	proxyHost      = "127.0.0.1"
)

// Names of the sources and destinations in the proxies' rule table.
func nodeName(i int) string        { return "n" + strconv.Itoa(i+1) }
func producerName(p int) string    { return "p" + strconv.Itoa(p) }
func consumerName(c int) string    { return "c" + strconv.Itoa(c) }
func transformerName(x int) string { return "x" + strconv.Itoa(x) }

const otherSource = "admin"

func nodeHost(i int) string { return nodeNet + strconv.Itoa(i+1) }

// sourceName names a connection's source from its address.
func sourceName(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return otherSource
	}
	ip := tcp.IP.To4()
	if ip == nil || ip[0] != 127 {
		return otherSource
	}
	id := int(ip[3])
	switch {
	case ip[1] == 0 && ip[2] == 1 && id >= 1:
		return nodeName(id - 1)
	case ip[1] == 0 && ip[2] == 2 && id >= 1:
		return producerName(id)
	case ip[1] == 0 && ip[2] == 3 && id >= 1:
		return consumerName(id)
	case ip[1] == 0 && ip[2] == 4 && id >= 1:
		return transformerName(id)
	}
	return otherSource
}

// faultNetwork is the proxies in front of a local cluster.
type faultNetwork struct {
	net   *faultnet.Net
	nodes []string // node names, by index
}

// startFaultNetwork starts a client and a controller proxy for each of
// n nodes, where the cluster's addresses say the nodes are.
func startFaultNetwork(ports func(i int) devcluster.Ports, n int) (*faultNetwork, error) {
	vn := &faultNetwork{net: faultnet.New(sourceName)}
	for i := range n {
		name := nodeName(i)
		vn.nodes = append(vn.nodes, name)
		for _, port := range []int{ports(i).Client, ports(i).Controller} {
			p := strconv.Itoa(port)
			if _, err := vn.net.Listen(net.JoinHostPort(proxyHost, p), name, net.JoinHostPort(nodeHost(i), p)); err != nil {
				vn.net.Close()
				return nil, err
			}
		}
	}
	return vn, nil
}

// nodeProps are the properties that put node i behind its proxies.
func (vn *faultNetwork) nodeProps(i int, p devcluster.Ports) map[string]string {
	host := nodeHost(i)
	return map[string]string{
		"listeners":             fmt.Sprintf("PLAINTEXT://%s:%d,CONTROLLER://%s:%d", host, p.Client, host, p.Controller),
		"advertised.listeners":  fmt.Sprintf("PLAINTEXT://%s:%d", proxyHost, p.Client),
		"outbound.bind.address": host,
	}
}

// clientDialer makes a client's connections start from addr, so the
// proxies can tell it from the others.
func clientDialer(local string) kgo.Opt {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		return d.DialContext(ctx, network, host)
	})
}

// others returns every node name but the given ones.
func (vn *faultNetwork) others(isolated ...string) []string {
	var out []string
	for _, n := range vn.nodes {
		keep := true
		for _, x := range isolated {
			if n == x {
				keep = false
			}
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

// clientLinks lists the links from every producer, consumer and
// transformer to node.
func clientLinks(producers, consumers, transformers int, node string) []faultnet.Link {
	var out []faultnet.Link
	for p := 1; p <= producers; p++ {
		out = append(out, faultnet.Link{From: producerName(p), To: node})
	}
	for c := 1; c <= consumers; c++ {
		out = append(out, faultnet.Link{From: consumerName(c), To: node})
	}
	for x := 1; x <= transformers; x++ {
		out = append(out, faultnet.Link{From: transformerName(x), To: node})
	}
	return out
}
