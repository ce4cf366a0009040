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

	"github.com/skein-log/skein/internal/wire"
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
	// resp's byte fields are), from the wire buffer pool.
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
}

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
	c := &Conn{
		nc:        nc,
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		bw:        bufio.NewWriterSize(nc, 64<<10),
		pending:   map[int32]*call{},
		closed:    make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
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
// fields, a fetch answer's records, point into) back to the buffer pool,
// after which nothing of the answer may be used. A follower's fetch
// answers are megabytes each and copied into its log; without this, each
// cost a fresh buffer of its size. release is never nil.
func (c *Conn) RequestPooled(ctx context.Context, req kmsg.Request) (kmsg.Response, func(), error) {
	noop := func() {}
	cl := &call{req: req, resp: req.ResponseKind(), done: make(chan struct{})}
	cl.resp.SetVersion(req.GetVersion())
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, noop, err
	}
	if len(c.pending) >= maxPending {
		c.mu.Unlock()
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
	if err != nil {
		c.fail(fmt.Errorf("rpc: write to %s: %w", c.RemoteAddr(), err))
	}

	select {
	case <-cl.done:
		return cl.resp, func() { wire.ReleaseFrame(cl.frame); cl.frame = nil }, cl.err
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, noop, ctx.Err()
	}
}

func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var size [4]byte
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			c.fail(fmt.Errorf("rpc: read from %s: %w", c.RemoteAddr(), err))
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 4 || n > MaxResponseBytes {
			c.fail(fmt.Errorf("rpc: response frame of %d bytes from %s", n, c.RemoteAddr()))
			return
		}
		// The peer is a node of this cluster and n is bounded: the buffer
		// is taken whole rather than grown as bytes arrive.
		frame := wire.FrameBuffer(int(n))
		if _, err := io.ReadFull(br, frame); err != nil {
			c.fail(fmt.Errorf("rpc: read from %s: %w", c.RemoteAddr(), err))
			return
		}
		id := int32(binary.BigEndian.Uint32(frame))
		c.mu.Lock()
		cl, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if !ok {
			wire.ReleaseFrame(frame)
			continue // the caller gave up on it
		}
		cl.frame = frame
		body := frame[4:]
		if cl.resp.IsFlexible() && cl.req.Key() != 18 {
			var err error
			if body, err = skipTags(body); err != nil {
				cl.err = err
				close(cl.done)
				continue
			}
		}
		if err := cl.resp.ReadFrom(body); err != nil {
			cl.err = fmt.Errorf("rpc: decode %s response: %w", kmsg.NameForKey(cl.req.Key()), err)
		}
		close(cl.done)
	}
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
