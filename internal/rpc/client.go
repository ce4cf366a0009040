// Package rpc is a minimal Kafka-protocol client for requests between
// Skein nodes: replica fetches, OffsetForLeaderEpoch, broker registration
// and heartbeats, forwarded admin requests. Peers are Skein nodes of the
// same build, so there is no version negotiation: callers set the version
// on each request.
//
// One Conn pipelines requests over one TCP connection and matches answers
// by correlation id. Any I/O error closes the connection and fails every
// call in flight; the caller redials.
package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/skein-log/skein/internal/bufpool"
)

// MaxResponseBytes bounds one response frame.
const MaxResponseBytes = 128 << 20

// maxPending bounds the calls waiting for an answer on one connection.
const maxPending = 1024

// ErrClosed is returned for calls on a closed connection.
var ErrClosed = errors.New("rpc: connection closed")

type call struct {
	req  kmsg.Request
	resp kmsg.Response
	err  error
	done chan struct{}
	// frame is the response frame resp was decoded from (and whose bytes
	// resp's byte fields are), from internal/bufpool.
	frame []byte
}

// Conn is one connection to a peer.
type Conn struct {
	nc        net.Conn
	formatter *kmsg.RequestFormatter

	writeMu sync.Mutex
	bw      *bufio.Writer
	buf     []byte

	mu      sync.Mutex
	nextID  int32
	pending map[int32]*call
	err     error // set once the connection is broken
	closed  chan struct{}

	// login, when set, is the SASL mechanism the connection logged in
	// with; renewAt (under mu) is when it logs in again, in place,
	// before the session lifetime the peer answered ends (KIP-368; zero:
	// never). gate keeps every other request from being written
	// between a re-authentication's SaslHandshake and its end, which the
	// peer would take for a protocol violation; answers still flow.
	login   sasl.Mechanism
	renewAt time.Time
	gate    sync.RWMutex
}

// renewShare is how much of a session's lifetime passes before the
// connection logs in again: Kafka's Java client picks 85-95%.
const renewShare = 0.85

// Dial connects to addr. clientID names the caller in the peer's logs.
func Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return DialFrom(ctx, nil, addr, clientID)
}

// DialFrom connects to addr from the local IP address local (nil: the OS
// chooses). clientID names the caller in the peer's logs.
func DialFrom(ctx context.Context, local net.IP, addr, clientID string) (*Conn, error) {
	return DialSecure(ctx, local, addr, clientID, nil)
}

// Upgrade secures a freshly dialed connection before any request: a TLS
// handshake, a SASL login, or both; it returns the connection to use.
type Upgrade func(ctx context.Context, nc net.Conn) (net.Conn, error)

// DialSecure is DialFrom with the connection upgraded (nil: plaintext)
// before it is returned, so a peer refusing this node's certificate or
// login is a dial error, not a broken call.
func DialSecure(ctx context.Context, local net.IP, addr, clientID string, upgrade Upgrade) (*Conn, error) {
	return DialLogin(ctx, local, addr, clientID, upgrade, nil)
}

// DialLogin is DialSecure followed by a SASL login with m (nil: none),
// which the connection renews in place before the session lifetime the
// peer answers ends.
func DialLogin(ctx context.Context, local net.IP, addr, clientID string, upgrade Upgrade, m sasl.Mechanism) (*Conn, error) {
	var d net.Dialer
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rpc: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if upgrade != nil {
		secured, err := upgrade(ctx, nc)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("rpc: securing the connection to %s: %w", addr, err)
		}
		nc = secured
	}
	var lifetime time.Duration
	if m != nil {
		var err error
		if lifetime, err = Login(ctx, m, addr, syncRoundTrip(nc, clientID)); err != nil {
			nc.Close()
			return nil, fmt.Errorf("rpc: logging in to %s: %w", addr, err)
		}
	}
	c := &Conn{
		nc:        nc,
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		bw:        bufio.NewWriterSize(nc, 64<<10),
		pending:   map[int32]*call{},
		closed:    make(chan struct{}),
		login:     m,
	}
	c.scheduleRenewal(lifetime)
	go c.readLoop()
	return c, nil
}

func (c *Conn) scheduleRenewal(lifetime time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.renewAt = time.Time{}
	if lifetime > 0 {
		c.renewAt = time.Now().Add(time.Duration(float64(lifetime) * renewShare))
	}
}

// renewLogin logs in again if the session is due, holding the gate so no
// other request is written meanwhile. A failure breaks the connection
// (the peer closes it anyway); the caller redials and logs in anew.
func (c *Conn) renewLogin(ctx context.Context) error {
	due := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.renewAt.IsZero() && !time.Now().Before(c.renewAt)
	}
	if c.login == nil || !due() {
		return nil
	}
	c.gate.Lock()
	defer c.gate.Unlock()
	if !due() {
		return nil // another caller renewed it meanwhile
	}
	lifetime, err := Login(ctx, c.login, c.RemoteAddr(), c.send)
	if err != nil {
		err = fmt.Errorf("%w: %w", errLoginClosed, err)
		c.fail(err)
		return err
	}
	c.scheduleRenewal(lifetime)
	return nil
}

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.nc.RemoteAddr().String() }

// Done is closed when the connection breaks or is closed.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// PeerClosed reports whether the connection broke or the peer has closed
// it, as far as the kernel knows right now (on Linux: the socket's TCP
// state, which moves as soon as the peer's FIN or reset arrives, before
// this connection's reader has run). A peer process that dies closes its
// sockets at once, so this tells of its death about as early as its other
// connections, a client's included, do.
func (c *Conn) PeerClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
	}
	return tcpPeerClosed(c.nc)
}

// Err is why the connection broke, once Done is closed.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection and fails calls in flight.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	return nil
}

// Request sends req (with its version already set) and waits for the
// answer or for ctx. A context that ends leaves the connection usable; the
// late answer is discarded.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := c.RequestPooled(ctx, req)
	return resp, err
}

// RequestPooled is Request for a caller that is done with the answer at
// some point: release gives the response frame (which the answer's byte
// fields, a fetch answer's records, point into) back to internal/bufpool,
// after which nothing of the answer may be used. A follower's fetch
// answers are megabytes each and copied into its log; without this, each
// cost a fresh buffer of its size. release is never nil.
func (c *Conn) RequestPooled(ctx context.Context, req kmsg.Request) (kmsg.Response, func(), error) {
	if err := c.renewLogin(ctx); err != nil {
		return nil, func() {}, err
	}
	c.gate.RLock()
	return c.sendHolding(ctx, req, c.gate.RUnlock)
}

// send is Request without the gate: for the re-authentication, which
// holds it.
func (c *Conn) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := c.sendHolding(ctx, req, func() {})
	return resp, err
}

// sendHolding writes req and waits for its answer; written is called
// once the request is on the wire (or failed to get there). release gives
// the answer's frame back to the pool (RequestPooled).
func (c *Conn) sendHolding(ctx context.Context, req kmsg.Request, written func()) (_ kmsg.Response, release func(), _ error) {
	noop := func() {}
	cl := &call{req: req, resp: req.ResponseKind(), done: make(chan struct{})}
	cl.resp.SetVersion(req.GetVersion())
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		written()
		return nil, noop, err
	}
	if len(c.pending) >= maxPending {
		c.mu.Unlock()
		written()
		return nil, noop, fmt.Errorf("rpc: %d requests already in flight to %s", maxPending, c.RemoteAddr())
	}
	id := c.nextID
	c.nextID++
	c.pending[id] = cl
	c.mu.Unlock()

	c.writeMu.Lock()
	c.buf = c.formatter.AppendRequest(c.buf[:0], req, id)
	if deadline, ok := ctx.Deadline(); ok {
		c.nc.SetWriteDeadline(deadline)
	} else {
		c.nc.SetWriteDeadline(time.Time{})
	}
	_, err := c.bw.Write(c.buf)
	if err == nil {
		err = c.bw.Flush()
	}
	c.writeMu.Unlock()
	written()
	if err != nil {
		c.fail(fmt.Errorf("rpc: write to %s: %w", c.RemoteAddr(), err))
	}

	select {
	case <-cl.done:
		return cl.resp, func() { bufpool.Put(cl.frame); cl.frame = nil }, cl.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, noop, ctx.Err()
	}
}

func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		frame, err := readFrame(br, MaxResponseBytes)
		if err != nil {
			c.fail(fmt.Errorf("rpc: read from %s: %w", c.RemoteAddr(), err))
			return
		}
		id := int32(binary.BigEndian.Uint32(frame))
		c.mu.Lock()
		cl, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if !ok {
			bufpool.Put(frame)
			continue // the caller gave up on it
		}
		cl.frame = frame
		cl.err = decodeResponse(cl.req, cl.resp, frame)
		close(cl.done)
	}
}

// readFrame reads one size-prefixed response frame (correlation id
// first) of at most limit bytes.
func readFrame(r io.Reader, limit int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > limit {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	// The peer is a node of this cluster and n is bounded: the buffer is
	// taken whole (from the pool; a caller that keeps the answer simply
	// never gives it back) rather than grown as bytes arrive.
	frame := bufpool.Get(int(n))
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, err
	}
	return frame, nil
}

// decodeResponse decodes a frame's body (after its correlation id) into
// resp, skipping the header's tags of flexible versions (ApiVersions has
// none, whatever its version).
func decodeResponse(req kmsg.Request, resp kmsg.Response, frame []byte) error {
	resp.SetVersion(req.GetVersion())
	body := frame[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("rpc: decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return nil
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[int32]*call{}
	close(c.closed)
	c.mu.Unlock()
	c.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}

func skipTags(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, errors.New("rpc: truncated response header")
	}
	b = b[used:]
	for i := uint64(0); i < n; i++ {
		if _, used = binary.Uvarint(b); used <= 0 {
			return nil, errors.New("rpc: truncated response header")
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || size > uint64(len(b)-used) {
			return nil, errors.New("rpc: truncated response header")
		}
		b = b[used+int(size):]
	}
	return b, nil
}
