package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/quorum"
	"github.com/skein-log/skein/internal/wire"
)

// maxInFlightPerConn bounds the requests one connection may have waiting
// for their answers. When it is reached the reader stops reading, which is
// TCP back-pressure on a client that pipelines too much.
const maxInFlightPerConn = 128

// writeBufferBytes is the size of each connection's response buffer.
const writeBufferBytes = 64 << 10

// slot holds one request's response until it is its turn to be written:
// Kafka requires answers in request order on a connection.
type slot struct {
	hdr wire.RequestHeader
	// version is the version the response is encoded in: the request's,
	// except for an unsupported ApiVersions, answered in v0.
	version int16
	done    chan struct{}
	resp    kmsg.Response // nil: send nothing (acks=0)
	once    sync.Once
	// closeConn makes the writer flush and close the connection here.
	closeConn bool
}

func (s *slot) respond(resp kmsg.Response) {
	s.once.Do(func() {
		s.resp = resp
		close(s.done)
	})
}

// conn serves one client connection with two goroutines: the reader
// decodes requests and starts their handlers in order; the writer sends
// the answers in the same order as they complete.
type conn struct {
	b        *Broker
	nc       net.Conn
	listener string
	// controller is set on controller listeners, which also carry the
	// quorum's raft frames and the controller-only APIs.
	controller bool
	host       string
	queue      chan *slot
	// readerGone is closed when the reader stops: the client went away
	// or sent something unreadable, so answers still pending (a long
	// poll, say) need not be waited for.
	readerGone chan struct{}
	// queueMu guards closing the queue against a closing slot sent from
	// a handler's goroutine (the reader's own sends need no lock).
	queueMu     sync.Mutex
	queueClosed bool
}

func (b *Broker) serveConn(nc net.Conn, listener string) {
	c := &conn{
		b:          b,
		nc:         nc,
		listener:   listener,
		controller: b.isControllerListener(listener),
		host:       hostOf(nc.RemoteAddr()),
		queue:      make(chan *slot, maxInFlightPerConn),

		readerGone: make(chan struct{}),
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	close(c.readerGone)
	c.queueMu.Lock()
	c.queueClosed = true
	close(c.queue)
	c.queueMu.Unlock()
	<-writerDone
	nc.Close()
	if c.controller {
		b.controllerSvc.connClosed(c)
	}
}

func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	return a.String()
}

func (c *conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	maxFrame := c.b.cfg.SocketRequestMaxBytes
	for {
		frame, err := wire.ReadFrame(br, maxFrame)
		if err != nil {
			// A deadline is only set by a stopping broker (drainConns).
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				c.b.log.Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			}
			return
		}
		if !c.dispatch(frame) {
			return
		}
	}
}

// dispatch decodes one frame and starts its handler. It returns false when
// the connection must be closed because the stream cannot be understood.
func (c *conn) dispatch(frame []byte) (keepOpen bool) {
	hdr, rest, err := wire.ParseHeader(frame)
	if err != nil {
		c.b.log.Info("closing connection: bad request header", "remote", c.nc.RemoteAddr().String(), "err", err)
		return false
	}
	if hdr.Key == quorum.RaftMessageKey && c.controller && c.b.quorum != nil {
		if err := quorum.HandleRaftFrame(frame, c.b.Image().ClusterID(), c.b.quorum.Step); err != nil && !errors.Is(err, quorum.ErrBusy) {
			if errors.Is(err, quorum.ErrStopped) {
				return false
			}
			if mm, ok := errors.AsType[*quorum.ClusterIDMismatchError](err); ok {
				// Said once, at error level, by noteForeignCluster: the
				// peer reconnects and is refused many times a second.
				c.b.noteForeignCluster(fmt.Sprintf("node %d (%s)", quorum.NodeID(mm.From), c.nc.RemoteAddr()), mm.Theirs, mm.Ours)
				return false
			}
			c.b.log.Warn("closing connection: bad raft frame", "remote", c.nc.RemoteAddr().String(), "err", err)
			return false
		}
		return true
	}
	spec, known := api.Lookup(hdr.Key)
	if known && !spec.ServedOn(c.controller, c.b.cfg.HasRole(config.RoleBroker)) {
		known = false
	}
	if !known {
		c.b.log.Info("closing connection: unsupported API key", "remote", c.nc.RemoteAddr().String(),
			"key", hdr.Key, "client", hdr.ClientID)
		return false
	}
	s := &slot{hdr: hdr, version: hdr.Version, done: make(chan struct{})}
	if hdr.Version < spec.MinVersion || hdr.Version > spec.MaxVersion {
		if hdr.Key != wire.ApiVersionsKey {
			// Only ApiVersions has a defined answer for versions we do not
			// speak; for any other key the body layout is unknown.
			c.b.log.Info("closing connection: unsupported API version", "remote", c.nc.RemoteAddr().String(),
				"api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "client", hdr.ClientID)
			return false
		}
		s.version = 0
		c.queue <- s
		s.respond(api.UnsupportedApiVersions())
		return true
	}
	body, err := wire.DecodeBody(hdr, rest)
	if err != nil {
		c.b.log.Info("closing connection: malformed request", "remote", c.nc.RemoteAddr().String(),
			"client", hdr.ClientID, "err", err)
		return false
	}
	c.queue <- s
	req := &api.Request{Version: hdr.Version, ClientID: hdr.ClientID, Host: c.host, Listener: c.listener,
		ControllerListener: c.controller, Conn: c, Body: body, CloseConn: c.closeAfterAnswers}
	if spec.Blocking {
		go c.serve(req, s)
		return true
	}
	return c.serve(req, s)
}

// serve runs a handler. A panic in a handler is a bug; it is logged with
// its stack and costs this connection only, never the broker.
func (c *conn) serve(req *api.Request, s *slot) (keepOpen bool) {
	defer func() {
		if r := recover(); r != nil {
			c.b.log.Error("handler panic; closing connection", "api", kmsg.NameForKey(req.Body.Key()),
				"panic", r, "stack", string(debug.Stack()))
			keepOpen = false
			c.nc.Close() // a handler on its own goroutine cannot return false to the reader
			s.respond(nil)
		}
	}()
	start := time.Now()
	spec, _ := api.Lookup(req.Body.Key())
	c.b.api.Serve(req, func(resp kmsg.Response) {
		c.b.metrics.ObserveRequest(req.Body, resp, time.Since(start))
		if c.controller && spec.Forwardable && resp != nil {
			// A broker may have forwarded this: tell it which metadata
			// version holds the outcome.
			tagImageVersion(resp, c.b.Image().Version())
		}
		s.respond(resp)
	})
	return true
}

func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, writeBufferBytes)
	var buf []byte
	failed := false
	for s := range c.queue {
		select {
		case <-s.done:
		case <-c.readerGone:
			// Answer what is ready; stop waiting for what is not.
			select {
			case <-s.done:
			default:
				failed = true
			}
		}
		if s.closeConn && !failed {
			bw.Flush()
			c.nc.Close() // the reader then ends the connection
			failed = true
			continue
		}
		if failed || s.resp == nil {
			continue
		}
		s.resp.SetVersion(s.version)
		buf = wire.AppendResponse(buf[:0], s.hdr, s.resp)
		if _, err := bw.Write(buf); err != nil {
			failed = true
			c.nc.Close() // unblocks the reader
			continue
		}
		// Flush when nothing else is ready, so pipelined answers share
		// one write system call.
		if len(c.queue) == 0 {
			if err := bw.Flush(); err != nil {
				failed = true
				c.nc.Close()
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a large fetch response's buffer
		}
	}
	if !failed {
		bw.Flush()
	}
}

// closeAfterAnswers closes the connection once every answer queued so
// far has been written: a closing slot makes the writer stop there.
func (c *conn) closeAfterAnswers() {
	s := &slot{closeConn: true, done: make(chan struct{})}
	close(s.done)
	c.queueMu.Lock()
	defer c.queueMu.Unlock()
	if c.queueClosed {
		return
	}
	select {
	case c.queue <- s:
	default:
		c.nc.Close() // the queue is full: close at once
	}
}
