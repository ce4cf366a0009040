package e2e

import (
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heapInUse is the live heap after a full collection; the broker runs in
// this process, so its buffers show up here.
func heapInUse() uint64 {
	// Twice: a buffer given back to internal/bufpool outlives one
	// collection in sync.Pool's victim cache. Free pooled buffers are not
	// memory any request holds (the next read takes them), and what they
	// can keep is bounded by what was in use two collections ago.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// roundTrip completes one request on a fresh connection. Connections are
// served concurrently, so this does not prove that every earlier
// connection was read; it gives the broker's readers time to run without
// sleeping. A heap check after it cannot fail spuriously (the bound holds
// whatever the broker has read), it can only miss a regression.
func roundTrip(t testing.TB, addr string) {
	t.Helper()
	c := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, 1)
	c.receive(req, 1)
	c.nc.Close()
}

// TestHugePrefixesWhileServing: many connections announce 2 GiB frames
// while a real client produces and consumes. Each bad connection is closed
// promptly, the heap does not grow by anything like the announced sizes,
// and the real client is unaffected.
func TestHugePrefixesWhileServing(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("served-meanwhile", 1, nil)
	before := heapInUse()

	const bad = 30
	served := make(chan error, 1)
	go func() { served <- produceAndReadBack(tb, "served-meanwhile", 200) }()
	conns := make([]*rawConn, bad)
	for i := range conns {
		conns[i] = dialRaw(t, tb.addr)
		prefix := sizePrefix(math.MaxInt32) // over the 100 MiB default
		if i%2 == 1 {
			prefix = sizePrefix(1 << 31) // negative
		}
		conns[i].write(append(prefix, "followed by junk"...))
	}
	for _, c := range conns {
		c.expectClosed()
	}
	if err := <-served; err != nil {
		t.Fatalf("real client during the attack: %v", err)
	}
	if grew := int64(heapInUse()) - int64(before); grew > 32<<20 {
		t.Fatalf("heap grew by %d MiB while rejecting %d huge frames", grew>>20, bad)
	}
}

// TestAnnouncedFrameSizeDoesNotPinMemory is the slow-sender attack:
// connections announce frames of socket.request.max.bytes and then send
// only a few bytes. The broker must hold memory for what arrived, not for
// what was announced; otherwise max.connections such peers pin
// max.connections × socket.request.max.bytes.
func TestAnnouncedFrameSizeDoesNotPinMemory(t *testing.T) {
	const maxRequest = 16 << 20
	const conns = 40 // 640 MiB if the announced size were allocated
	tb := startBroker(t, withProp("socket.request.max.bytes", strconv.Itoa(maxRequest)))
	tb.createTopic("slow-senders", 1, nil)
	before := heapInUse()

	slow := make([]*rawConn, conns)
	for i := range slow {
		slow[i] = dialRaw(t, tb.addr)
		if err := slow[i].write(append(sizePrefix(maxRequest), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 1, 2, 3)); err != nil {
			t.Fatalf("slow sender %d: %v", i, err)
		}
	}
	roundTrip(t, tb.addr)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d connections each announcing %d MiB and sending 13 bytes: heap grew %d KiB", conns, maxRequest>>20, grew>>10)
	// Per connection: one 64 KiB frame chunk, the 64 KiB read and write
	// buffers, goroutine stacks and bookkeeping.
	if grew > conns*(512<<10) {
		t.Fatalf("heap grew by %d MiB for %d slow senders: announced sizes are being allocated", grew>>20, conns)
	}
	requireServing(t, tb, "slow-senders", 10)

	// The slow senders are still waiting for their frames; when they give
	// up, the broker forgets them.
	for _, c := range slow {
		c.nc.Close()
	}
}
