package faultnet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/testport"
)

// echoServer answers every line with the same line, and reports each
// connection it sees end on closed.
func echoServer(t *testing.T) (addr string, closed <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ends := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				ends <- struct{}{}
			}()
		}
	}()
	return l.Addr().String(), ends
}

// byHost names a source by its IP address.
func byHost(a net.Addr) string {
	host, _, _ := net.SplitHostPort(a.String())
	return host
}

func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connectAndRead connects to addr and reads a byte: the error of the
// dial or of the read (the kernel accepts a connection before the proxy
// can reset it, so a reset shows at either).
func connectAndRead(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}

func roundTrip(t *testing.T, c net.Conn, line string, within time.Duration) error {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(within))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		t.Fatalf("echo %q, want %q", got, line)
	}
	return nil
}

func setup(t *testing.T) (*Net, *Proxy, <-chan struct{}) {
	t.Helper()
	target, closed := echoServer(t)
	n := New(byHost)
	t.Cleanup(func() { n.Close() })
	p, err := n.Listen("127.0.0.1:0", "server", target)
	if err != nil {
		t.Fatal(err)
	}
	return n, p, closed
}

func TestPassForwardsBothWays(t *testing.T) {
	_, p, _ := setup(t)
	c := dialFrom(t, "127.0.0.1", p.Addr())
	for _, line := range []string{"one", "two", strings.Repeat("x", 100_000)} {
		if err := roundTrip(t, c, line, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBlackholeKeepsConnectionOpenAndHealResumes(t *testing.T) {
	n, p, serverEnds := setup(t)
	c := dialFrom(t, "127.0.0.1", p.Addr())
	if err := roundTrip(t, c, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Set(Rule{Fault: Blackhole}, Link{"127.0.0.1", "server"}); err != nil {
		t.Fatal(err)
	}
	// Nothing comes back while the link is a blackhole, and the socket is
	// not closed either: the read times out rather than ending.
	err := roundTrip(t, c, "during", 300*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a blackhole: %v, want a timeout", err)
	}
	// A close does not cross the blackhole either.
	c.(*net.TCPConn).CloseWrite()
	select {
	case <-serverEnds:
		t.Fatal("the server saw the client's close through a blackhole")
	case <-time.After(200 * time.Millisecond):
	}
	n.HealAll()
	// The held line arrives, is echoed, and then the close.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "during\n" {
		t.Fatalf("after heal: %q, %v; want the held line then the end", got, err)
	}
	select {
	case <-serverEnds:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the close after the heal")
	}
}

func TestBlackholeHoldsNewConnectionsUntilHealed(t *testing.T) {
	n, p, _ := setup(t)
	if err := n.Set(Rule{Fault: Blackhole}, Link{"127.0.0.1", "server"}); err != nil {
		t.Fatal(err)
	}
	c := dialFrom(t, "127.0.0.1", p.Addr()) // accepted by the kernel, then held
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a held connection: %v, want a timeout", err)
	}
	n.HealAll()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "held\n" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
}

func TestDropClosesOpenAndNewConnections(t *testing.T) {
	n, p, serverEnds := setup(t)
	c := dialFrom(t, "127.0.0.1", p.Addr())
	if err := roundTrip(t, c, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Set(Rule{Fault: Drop}, Link{"127.0.0.1", "server"}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read on a dropped connection: %v, want a reset", err)
	}
	select {
	case <-serverEnds:
	case <-time.After(5 * time.Second):
		t.Fatal("the server side of a dropped connection stayed open")
	}
	if err := connectAndRead(p.Addr()); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a new connection over a dropped link: %v, want a reset", err)
	}
	n.HealAll()
	healed := dialFrom(t, "127.0.0.1", p.Addr())
	if err := roundTrip(t, healed, "after", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestDelayHoldsEachChunk(t *testing.T) {
	n, p, _ := setup(t)
	c := dialFrom(t, "127.0.0.1", p.Addr())
	const d = 150 * time.Millisecond
	if err := n.Set(Rule{Fault: Delay, Delay: d}, Link{"127.0.0.1", "server"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := roundTrip(t, c, "slow", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Both directions are delayed: at least two delays.
	if took := time.Since(start); took < 2*d {
		t.Fatalf("round trip over a %v delay took %v", d, took)
	}
	if err := n.Set(Rule{Fault: Delay, Delay: 2 * MaxDelay}, Link{"a", "b"}); err == nil {
		t.Error("a delay over MaxDelay was accepted")
	}
}

func TestRulesApplyPerSource(t *testing.T) {
	n, p, _ := setup(t)
	cut := dialFrom(t, "127.0.0.2", p.Addr())
	kept := dialFrom(t, "127.0.0.3", p.Addr())
	if err := n.Set(Rule{Fault: Drop}, Link{"127.0.0.2", "server"}); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(t, kept, "still", 5*time.Second); err != nil {
		t.Fatalf("a connection from another source was hurt: %v", err)
	}
	cut.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cut.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the cut source's connection: %v, want it closed", err)
	}
	if got := n.Faults(); got != "127.0.0.2->server drop" {
		t.Errorf("Faults() = %q", got)
	}
	seen := n.Seen()
	if seen[Link{"127.0.0.2", "server"}] != 1 || seen[Link{"127.0.0.3", "server"}] != 1 {
		t.Errorf("Seen() = %v, want one connection from each source", seen)
	}
}

func TestTargetDownClosesClient(t *testing.T) {
	// A reserved port nothing listens on: a port 0 gave and that was
	// closed again may be bound by another test process meanwhile.
	target := fmt.Sprintf("127.0.0.1:%d", testport.One(t))
	n := New(byHost)
	defer n.Close()
	p, err := n.Listen("127.0.0.1:0", "dead", target)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel accepts the connection; the proxy resets it when it cannot
	// reach the target, so the client sees a reset (which clients retry),
	// at the dial or at the first read.
	if err := connectAndRead(p.Addr()); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("connection to a proxy of a dead target: %v, want a reset", err)
	}
}

func TestBetween(t *testing.T) {
	got := Between([]string{"1"}, []string{"1", "2", "3"})
	want := []Link{{"1", "2"}, {"2", "1"}, {"1", "3"}, {"3", "1"}}
	if len(got) != len(want) {
		t.Fatalf("Between = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Between = %v, want %v", got, want)
		}
	}
}
