package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// closedWithin waits for the broker to close c and returns how long that
// took; the test fails if it answers or keeps the connection past limit.
func closedWithin(t *testing.T, c *rawConn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.nc.SetReadDeadline(start.Add(limit))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	took := time.Since(start)
	if n > 0 {
		t.Fatalf("broker sent %#x instead of closing the connection", b[0])
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %v", limit)
	}
	return took
}

// TestStalledFrameIsClosed: a client sends 10 bytes of a frame that
// declared 100 and goes silent. The broker closes it once
// socket.request.read.timeout.ms has passed, long before
// connections.max.idle.ms, and keeps serving.
func TestStalledFrameIsClosed(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	tb := startBroker(t, withProp("socket.request.read.timeout.ms", strconv.Itoa(int(readTimeout/time.Millisecond))))
	tb.createTopic("stalled-frame", 1, nil)
	requireServing(t, tb, "stalled-frame", 20)

	c := dialRaw(t, tb.addr)
	if err := c.write(append(sizePrefix(100), 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff)); err != nil {
		t.Fatal(err)
	}
	took := closedWithin(t, c, 5*time.Second)
	if took < readTimeout-50*time.Millisecond {
		t.Fatalf("closed after %v, before socket.request.read.timeout.ms (%v)", took, readTimeout)
	}
	t.Logf("stalled frame closed after %v (timeout %v)", took, readTimeout)
	// A stalled size prefix (2 of its 4 bytes) is a started frame too.
	c = dialRaw(t, tb.addr)
	if err := c.write([]byte{0, 0}); err != nil {
		t.Fatal(err)
	}
	closedWithin(t, c, 5*time.Second)
	consumeCount(t, tb, "stalled-frame", 20)
}

// TestIdleConnectionIsClosed: connections.max.idle.ms closes a connection
// that sends nothing, and one that went silent after a request, but not
// one waiting for the answer to a long poll longer than the idle time.
func TestIdleConnectionIsClosed(t *testing.T) {
	const idle = 500 * time.Millisecond
	tb := startBroker(t, withProp("connections.max.idle.ms", strconv.Itoa(int(idle/time.Millisecond))))
	tb.createTopic("idle-conns", 1, nil)
	requireServing(t, tb, "idle-conns", 20)

	silent := dialRaw(t, tb.addr)
	used := dialRaw(t, tb.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	used.send(av, 1)
	used.receive(av, 1)
	polling := dialRaw(t, tb.addr)
	const wait = 3 * idle
	fetch := fetchAtEnd("idle-conns", 20, wait)
	start := time.Now()
	polling.send(fetch, 7)

	for name, c := range map[string]*rawConn{"silent": silent, "used": used} {
		closedWithin(t, c, 10*time.Second)
		if took := time.Since(start); took < idle-100*time.Millisecond {
			t.Fatalf("%s connection closed after %v, before connections.max.idle.ms", name, took)
		}
	}
	polling.receive(fetch, 7)
	if took := time.Since(start); took < wait {
		t.Fatalf("long poll answered after %v, before its max wait %v", took, wait)
	}
	// Having been answered, it is idle from now on.
	closedWithin(t, polling, 10*time.Second)
	consumeCount(t, tb, "idle-conns", 20)
}

// fetchAtEnd is a consumer Fetch of partition 0 at offset that waits up
// to wait for one byte.
func fetchAtEnd(topic string, offset int64, wait time.Duration) *kmsg.FetchRequest {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis = int32(wait / time.Millisecond)
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	return fetch
}

// dialFrom opens n connections to addr from the local address ip.
func dialFrom(t *testing.T, ip, addr string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: rawIOTimeout}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d from %s: %v", len(conns), ip, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// openCount counts the connections the broker kept: a refused one reads
// EOF at once; a kept one times out. Each is first made to round-trip, so
// the broker has decided on all of them.
func openCount(t *testing.T, conns []net.Conn) int {
	t.Helper()
	req := rawRequestFrame(kmsg.NewPtrApiVersionsRequest(), 1)
	open := 0
	for _, c := range conns {
		c.SetDeadline(time.Now().Add(rawIOTimeout))
		if _, err := c.Write(req); err != nil {
			continue
		}
		var b [4]byte
		if _, err := c.Read(b[:]); err == nil {
			open++
		}
	}
	return open
}

// clientFrom is a franz-go client whose connections start from ip.
func clientFrom(tb *testBroker, ip string) (*kgo.Client, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: rawIOTimeout}
	return kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.Dialer(d.DialContext))
}

// produceAndConsumeFrom produces n records from ip and reads them back
// from ip, each exactly once.
func produceAndConsumeFrom(t *testing.T, tb *testBroker, ip, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := clientFrom(tb, ip)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d from %s: %v", i, ip, err)
		}
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: rawIOTimeout}
	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.Dialer(d.DialContext), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume from %s: %d of %d: %v", ip, len(seen), n, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume from %s: %v", ip, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("record %s read %d times", v, k)
		}
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct records, want %d", len(seen), n)
	}
}

// TestIdleFloodFromOneAddress: 2,000 idle connections from one address
// use up that address's max.connections.per.ip and no more; a client on
// another address produces and consumes, and so does one on an address
// whose override leaves room beside its own 1,000 idle connections.
// Refusals are counted in skein_connections_refused_total.
func TestIdleFloodFromOneAddress(t *testing.T) {
	const perIP = 1000
	tb := startBroker(t,
		withProp("max.connections", "2500"),
		withProp("max.connections.per.ip", strconv.Itoa(perIP)),
		withProp("max.connections.per.ip.overrides", fmt.Sprintf("127.0.0.3:%d", perIP+30)))
	tb.createTopic("flood-other", 1, nil)
	tb.createTopic("flood-same", 1, nil)

	flood := dialFrom(t, "127.0.0.2", tb.addr, 2*perIP)
	if open := openCount(t, flood); open != perIP {
		t.Fatalf("%d of %d connections from one address kept, want max.connections.per.ip = %d", open, len(flood), perIP)
	}
	if got := refusedTotal(t, tb, "max_connections_per_ip"); got != perIP {
		t.Fatalf("skein_connections_refused_total = %v, want %d", got, perIP)
	}
	produceAndConsumeFrom(t, tb, "127.0.0.1", "flood-other", 50)

	same := dialFrom(t, "127.0.0.3", tb.addr, perIP)
	if open := openCount(t, same); open != perIP {
		t.Fatalf("%d of %d connections kept within the override", open, perIP)
	}
	produceAndConsumeFrom(t, tb, "127.0.0.3", "flood-same", 50)
}

func refusedTotal(t *testing.T, tb *testBroker, reason string) float64 {
	t.Helper()
	mfs, err := tb.b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "skein_connections_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
