package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// faultProxy is a TCP proxy in front of one broker that can lose the
// response to chosen Produce requests: it forwards the request, waits until
// the broker has answered it (so the write happened), then closes both
// connections instead of relaying the answer. The client sees a broken
// connection and has to retry a write that already succeeded, which is
// exactly the case idempotent producers exist for.
//
// Clients must be told to come back through the proxy: start the broker
// with advertised.listeners set to the proxy's address.
type faultProxy struct {
	t  testing.TB
	ln net.Listener

	mu          sync.Mutex
	target      string
	dropOrdinal map[int]bool // 1-based counts of Produce requests to lose the answer to
	produceSeen int
	dropped     int
	conns       map[net.Conn]struct{}
	closed      bool

	wg sync.WaitGroup
}

// proxyMaxFrame bounds one Kafka frame through the proxy, the broker's own
// default socket.request.max.bytes.
const proxyMaxFrame = 100 << 20

// kafkaProduceKey is the Produce API key.
const kafkaProduceKey = 0

// newFaultProxy listens on 127.0.0.1 with an ephemeral port; call start
// once the broker's address is known. It is closed when the test ends.
func newFaultProxy(t testing.TB) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &faultProxy{t: t, ln: ln, dropOrdinal: map[int]bool{}, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's listening address.
func (p *faultProxy) addr() string { return p.ln.Addr().String() }

// dropProduceResponses loses the responses to the Produce requests with
// these ordinals (1 is the first Produce request through the proxy, on any
// connection, retries included).
func (p *faultProxy) dropProduceResponses(ordinals ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range ordinals {
		p.dropOrdinal[o] = true
	}
}

// droppedResponses is how many responses were lost so far.
func (p *faultProxy) droppedResponses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// start forwards every accepted connection to target.
func (p *faultProxy) start(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.wg.Add(1)
	go p.acceptLoop()
}

func (p *faultProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		broker, err := net.Dial("tcp", target)
		if err != nil {
			p.t.Logf("proxy: dial broker %s: %v", target, err)
			client.Close()
			continue
		}
		if !p.track(client, broker) {
			client.Close()
			broker.Close()
			return
		}
		pc := &proxiedConn{proxy: p, client: client, broker: broker, doomed: map[int32]bool{}}
		p.wg.Add(2)
		go pc.forwardRequests()
		go pc.forwardResponses()
	}
}

// track registers a connection pair for close; false once closed.
func (p *faultProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *faultProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// noteProduce counts a Produce request and says whether its answer is to
// be lost.
func (p *faultProxy) noteProduce() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.produceSeen++
	return p.dropOrdinal[p.produceSeen]
}

func (p *faultProxy) noteDropped() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped++
}

func (p *faultProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// proxiedConn is one client connection and its broker connection.
type proxiedConn struct {
	proxy  *faultProxy
	client net.Conn
	broker net.Conn

	mu     sync.Mutex
	doomed map[int32]bool // correlation ids whose response is to be lost

	closeOnce sync.Once
}

func (c *proxiedConn) close() {
	c.closeOnce.Do(func() {
		c.client.Close()
		c.broker.Close()
		c.proxy.untrack(c.client, c.broker)
	})
}

// forwardRequests copies request frames to the broker, marking the
// correlation id of a Produce request whose answer is to be lost before the
// broker can possibly answer it.
func (c *proxiedConn) forwardRequests() {
	defer c.proxy.wg.Done()
	defer c.close()
	for {
		frame, err := readKafkaFrame(c.client)
		if err != nil {
			return
		}
		body := frame[4:]
		if len(body) < 8 {
			return // not a Kafka request header: drop the connection
		}
		apiKey := int16(binary.BigEndian.Uint16(body[0:2]))
		correlationID := int32(binary.BigEndian.Uint32(body[4:8]))
		if apiKey == kafkaProduceKey && c.proxy.noteProduce() {
			c.mu.Lock()
			c.doomed[correlationID] = true
			c.mu.Unlock()
		}
		if _, err := c.broker.Write(frame); err != nil {
			return
		}
	}
}

// forwardResponses copies response frames to the client, except a doomed
// one: then both connections are closed, after the broker has answered.
func (c *proxiedConn) forwardResponses() {
	defer c.proxy.wg.Done()
	defer c.close()
	for {
		frame, err := readKafkaFrame(c.broker)
		if err != nil {
			return
		}
		if len(frame) < 8 {
			return
		}
		correlationID := int32(binary.BigEndian.Uint32(frame[4:8]))
		c.mu.Lock()
		doomed := c.doomed[correlationID]
		c.mu.Unlock()
		if doomed {
			c.proxy.noteDropped()
			return
		}
		if _, err := c.client.Write(frame); err != nil {
			return
		}
	}
}

// readKafkaFrame reads one size-prefixed frame and returns it whole,
// prefix included.
func readKafkaFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > proxyMaxFrame {
		return nil, fmt.Errorf("frame size %d out of range", n)
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		return nil, errors.Join(errors.New("short frame"), err)
	}
	return frame, nil
}
