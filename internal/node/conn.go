package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/bufpool"
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
	// fetch marks a consumer Fetch; fetchHeld is what its answer holds of
	// fetch.response.max.inflight.bytes (the grant, then the encoded size),
	// released once it is written or dropped.
	fetch     bool
	fetchHeld int64
	// raw marks the answer to a bare SASL token (v0 SaslHandshake):
	// rawToken is sent as a bare size-prefixed frame if rawOK.
	raw, rawOK bool
	rawToken   []byte
	// recycle are holds of pooled buffers the answer refers to (a fetch
	// answer's records, api.Request.Recycle), released once the answer is
	// written (the vectored write sends straight from them) or dropped.
	// recycleMu: handlers add them on their goroutines.
	recycleMu sync.Mutex
	recycle   []*bufpool.Ref
}

func (s *slot) keep(buf *bufpool.Ref) {
	s.recycleMu.Lock()
	s.recycle = append(s.recycle, buf)
	s.recycleMu.Unlock()
}

// giveBack releases the answer's holds of pooled buffers: it refers to
// them no more once it is encoded (or dropped). A buffer another answer
// shares goes back to the pool with the last hold.
func (s *slot) giveBack() {
	s.recycleMu.Lock()
	bufs := s.recycle
	s.recycle = nil
	s.recycleMu.Unlock()
	for _, b := range bufs {
		b.Release()
	}
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
	// principal is who the connection authenticated as (connPrincipal,
	// then SASL).
	principal api.Principal
	// plaintext is set on listeners without TLS, whose first bytes are
	// checked for a TLS hello; checked says that was done.
	plaintext, checked bool
	// sasl is the authentication on a SASL listener (nil elsewhere).
	sasl  *connSASL
	queue chan *slot
	// readerGone is closed when the reader stops: the client went away
	// or sent something unreadable, so answers still pending (a long
	// poll, say) need not be waited for.
	readerGone chan struct{}
	// queueMu guards closing the queue against a closing slot sent from
	// a handler's goroutine (the reader's own sends need no lock).
	queueMu     sync.Mutex
	queueClosed bool
	// frameDone tells the reader, after dispatch, that the frame it read
	// may go back to the buffer pool (a Produce's; owned by the reader).
	frameDone bool

	// pending counts answers queued but not yet written (or dropped): a
	// connection waiting for one is not idle. lastActive is the time, in
	// Unix nanoseconds, a request last arrived or an answer was written.
	pending    atomic.Int32
	lastActive atomic.Int64
	// fetchUnsent is the fetch budget held by this connection's answers
	// not yet written; fetchSent is signalled when it falls.
	fetchUnsent atomic.Int64
	fetchSent   chan struct{}
	// mutedUntil is when a throttled client may be read again (conn_quota.go).
	mutedUntil atomic.Int64
	// vec is the writer's encoding of a large Fetch answer in pieces
	// (writeVectored); owned by the writer goroutine.
	vec wire.VectoredFetch
}

// fetchUnsentPerConn bounds the fetch answers one connection may hold
// unwritten: a further Fetch is not read from disk (so its answer is not
// built) until the earlier ones are on the socket. A client that stops
// reading thus pins at most one answer, not one per pipelined request.
const fetchUnsentPerConn = 1 << 20

func (b *Broker) serveConn(nc net.Conn, listener string) {
	c := &conn{
		b:          b,
		nc:         nc,
		listener:   listener,
		controller: b.isControllerListener(listener),
		host:       hostOf(nc.RemoteAddr()),
		principal:  connPrincipal(b.cfg, listener, nc),
		plaintext:  b.tlsServers[listener] == nil,
		queue:      make(chan *slot, maxInFlightPerConn),

		readerGone: make(chan struct{}),
		fetchSent:  make(chan struct{}, 1),
	}
	c.sasl = b.newConnSASL(c)
	c.lastActive.Store(time.Now().UnixNano())
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

// errIdle ends a connection silent for connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

// errDraining ends the reader of a stopping broker.
var errDraining = errors.New("broker stopping")

func (c *conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	maxFrame := c.b.cfg.SocketRequestMaxBytes
	for {
		frame, release, err := c.readFrame(br, maxFrame)
		if err != nil {
			switch {
			case errors.Is(err, errTLSOnPlaintext):
				c.b.metrics.TLSFailed(c.listener, "tls_on_plaintext")
				c.b.logger(loggerConnection).Info("closing connection: the client started TLS on a plaintext listener (is its security.protocol right?)",
					"listener", c.listener, "remote", c.nc.RemoteAddr().String())
			case errors.Is(err, errIdle):
				c.b.metrics.ConnectionTimedOut(c.listener, "idle")
				c.b.logger(loggerConnection).Debug("closing idle connection", "remote", c.nc.RemoteAddr().String(), "idle", c.b.cfg.ConnectionsMaxIdle)
			case errors.Is(err, os.ErrDeadlineExceeded) && !c.b.draining.Load():
				c.b.metrics.ConnectionTimedOut(c.listener, "request_read_timeout")
				c.b.logger(loggerConnection).Info("closing connection: request frame not received whole within socket.request.read.timeout.ms",
					"remote", c.nc.RemoteAddr().String(), "timeout", c.b.cfg.SocketRequestReadTimeout)
			case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, errDraining):
				// The client went away, or the broker stops (drainConns).
			default:
				c.b.logger(loggerConnection).Info("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			}
			return
		}
		if !c.awaitUnmuted() {
			release()
			return
		}
		c.lastActive.Store(time.Now().UnixNano())
		keepOpen, handedOff := c.dispatch(frame, release)
		if !handedOff {
			release()
		}
		if c.frameDone {
			c.frameDone = false
			wire.ReleaseFrame(frame)
		}
		if !keepOpen {
			return
		}
	}
}

// readFrame waits for the next request, at most connections.max.idle.ms
// after the connection was last active (a connection with answers still
// owed is never idle), then reads it whole within
// socket.request.read.timeout.ms of its first byte. It takes one from
// queued.max.requests, and from queued.max.request.bytes the memory the
// frame's buffer grows to as its bytes arrive (so a peer that announces a
// large frame and trickles it holds budget for what it sent). Both wait
// while other requests hold them, but not past the frame's deadline: frames
// that each hold part of the budget and wait for more cannot deadlock, the
// slowest is closed. release gives everything back.
func (c *conn) readFrame(br *bufio.Reader, maxFrame int32) (frame []byte, release func(), err error) {
	if err := c.awaitFrame(br); err != nil {
		return nil, nil, err
	}
	if c.plaintext && !c.checked {
		c.checked = true
		if err := checkNotTLS(br); err != nil {
			return nil, nil, err
		}
	}
	deadline := time.Now().Add(c.b.cfg.SocketRequestReadTimeout)
	if err := c.setReadDeadline(deadline); err != nil {
		return nil, nil, err
	}
	size, err := wire.ReadFrameSize(br, maxFrame)
	if err != nil {
		return nil, nil, err
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	requestCount, requestBytes := c.b.requestCount, c.b.requestBytes
	if c.controller {
		// Controller listeners carry the quorum's own frames, which
		// handlers waiting for a commit depend on: they must never wait
		// behind those handlers. Only voters and brokers connect there.
		requestCount, requestBytes = nil, nil
	}
	var held, count int64
	var once sync.Once
	release = func() {
		once.Do(func() {
			requestBytes.release(held)
			requestCount.release(count)
		})
	}
	var ok bool
	if count, ok = requestCount.acquireBy(1, c.b.stop, timer.C); !ok {
		return nil, nil, c.budgetWaitEnded()
	}
	frame, err = wire.ReadFrameBodyPooled(br, size, func(n int) error {
		got, ok := requestBytes.acquireBy(int64(n), c.b.stop, timer.C)
		held += got
		if !ok {
			return c.budgetWaitEnded()
		}
		return nil
	})
	if err != nil {
		release()
		return nil, nil, err
	}
	return frame, release, nil
}

// budgetWaitEnded says why a wait for the request budgets ended.
func (c *conn) budgetWaitEnded() error {
	select {
	case <-c.b.stop:
		return errDraining
	default:
		return fmt.Errorf("waiting for queued.max.request.bytes: %w", os.ErrDeadlineExceeded)
	}
}

// awaitFrame returns once the first byte of a frame is buffered.
func (c *conn) awaitFrame(br *bufio.Reader) error {
	idle := c.b.cfg.ConnectionsMaxIdle
	for {
		deadline := time.Unix(0, c.lastActive.Load()).Add(idle)
		if now := time.Now(); !deadline.After(now) {
			if c.pending.Load() == 0 {
				return errIdle
			}
			deadline = now.Add(idle)
		}
		if err := c.setReadDeadline(deadline); err != nil {
			return err
		}
		_, err := br.Peek(1)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.b.draining.Load() {
			return err
		}
	}
}

// setReadDeadline arms the reader's deadline unless the broker is
// draining: drainConns sets draining before it moves every deadline into
// the past, so either that move comes after this one or this sees the flag.
func (c *conn) setReadDeadline(t time.Time) error {
	c.nc.SetReadDeadline(t)
	if c.b.draining.Load() {
		return errDraining
	}
	return nil
}

// dispatch decodes one frame and starts its handler. It returns false when
// the connection must be closed because the stream cannot be understood.
// handedOff says a handler on its own goroutine took release, to call when
// it is done; otherwise the caller releases the frame's budget.
func (c *conn) dispatch(frame []byte, release func()) (keepOpen, handedOff bool) {
	if c.sasl != nil && c.sasl.s.RawToken() {
		c.rawAuthenticate(frame)
		return true, false
	}
	hdr, rest, err := wire.ParseHeader(frame)
	if err != nil {
		c.b.logger(loggerConnection).Info("closing connection: bad request header", "remote", c.nc.RemoteAddr().String(), "err", err)
		return false, false
	}
	if hdr.Key == quorum.RaftMessageKey && c.controller && c.b.quorum != nil {
		if !c.saslAdmits(hdr.Key, hdr.ClientID) {
			// Raft frames too: not before a login, not after its
			// connections.max.reauth.ms lifetime (KIP-368).
			return false, false
		}
		if c.principal != api.BrokerPrincipal {
			// Only voters speak Raft: on a TLS controller listener a
			// certificate of a super user.
			c.b.logger(loggerConnection).Warn("closing connection: raft frame from a connection that is not a controller", "remote", c.nc.RemoteAddr().String(),
				"principal", c.principal.String())
			return false, false
		}
		if err := quorum.HandleRaftFrameFrom(frame, c.b.Image().ClusterID(), c.b.quorum.StepFrom); err != nil && !errors.Is(err, quorum.ErrBusy) {
			if errors.Is(err, quorum.ErrStopped) {
				return false, false
			}
			if mm, ok := errors.AsType[*quorum.ClusterIDMismatchError](err); ok {
				// Said once, at error level, by noteForeignCluster: the
				// peer reconnects and is refused many times a second.
				c.b.noteForeignCluster(fmt.Sprintf("node %d (%s)", quorum.NodeID(mm.From), c.nc.RemoteAddr()), mm.Theirs, mm.Ours)
				return false, false
			}
			c.b.logger(loggerConnection).Warn("closing connection: bad raft frame", "remote", c.nc.RemoteAddr().String(), "err", err)
			return false, false
		}
		return true, false
	}
	spec, known := api.Lookup(hdr.Key)
	if known && !spec.ServedOn(c.controller, c.b.cfg.HasRole(config.RoleBroker)) {
		known = false
	}
	if !known {
		c.b.logger(loggerConnection).Info("closing connection: unsupported API key", "remote", c.nc.RemoteAddr().String(),
			"key", hdr.Key, "client", hdr.ClientID)
		return false, false
	}
	if !c.saslAdmits(hdr.Key, hdr.ClientID) {
		return false, false
	}
	s := &slot{hdr: hdr, version: hdr.Version, done: make(chan struct{})}
	if hdr.Version < spec.MinVersion || hdr.Version > spec.MaxVersion {
		if hdr.Key != wire.ApiVersionsKey {
			// Only ApiVersions has a defined answer for versions we do not
			// speak; for any other key the body layout is unknown.
			c.b.logger(loggerConnection).Info("closing connection: unsupported API version", "remote", c.nc.RemoteAddr().String(),
				"api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "client", hdr.ClientID)
			return false, false
		}
		s.version = 0
		c.enqueue(s)
		s.respond(api.UnsupportedApiVersions())
		return true, false
	}
	body, err := wire.DecodeBody(hdr, rest)
	if err != nil {
		c.b.logger(loggerConnection).Info("closing connection: malformed request", "remote", c.nc.RemoteAddr().String(),
			"client", hdr.ClientID, "err", err)
		return false, false
	}
	if err := wire.CheckElements(body); err != nil {
		// Serving it would cost far more than the frame (an answer per
		// element); no client sends one.
		c.b.logger(loggerConnection).Warn("closing connection: request too large to serve", "remote", c.nc.RemoteAddr().String(),
			"client", hdr.ClientID, "err", err)
		return false, false
	}
	if f, ok := body.(*kmsg.FetchRequest); ok {
		s.fetch, s.fetchHeld = c.limitFetch(f)
	}
	c.enqueue(s)
	req := &api.Request{Version: hdr.Version, ClientID: hdr.ClientID, Host: c.host, Listener: c.listener,
		Principal: c.principal, SASL: c.saslSession(), ControllerListener: c.controller, Conn: c, Body: body, CloseConn: c.closeAfterAnswers,
		Recycle: s.keep}
	if spec.Blocking {
		go func() {
			defer release()
			c.serve(req, s)
		}()
		return true, true
	}
	if !c.controller {
		// A leader that has not caught up with a new topic waits here,
		// on the reader, so later requests stay behind (metadata_wait.go).
		c.b.awaitMetadataFor(body)
	}
	// A Produce handler is done with the frame when it returns: every
	// batch is appended (copied into the log) by then, or copied to wait
	// for its transaction's verification (KIP-890), and what waits for
	// acks holds no byte of it. Other handlers may keep byte fields
	// of their request (group protocol metadata, assignments), so only
	// a Produce frame goes back to the pool.
	c.frameDone = hdr.Key == int16(kmsg.Produce)
	return c.serve(req, s), false
}

// enqueue hands a slot to the writer, which answers in this order.
func (c *conn) enqueue(s *slot) {
	c.pending.Add(1)
	c.queue <- s
}

// limitFetch caps a consumer's Fetch by what is left of the broker's
// fetch.response.max.inflight.bytes before any partition is read, and
// returns what the answer holds until written. While this connection
// still holds more than fetchUnsentPerConn of unwritten answers it first
// waits for the writer, so a client that sends fetches and never reads
// the answers pins one answer's worth, not one per request. Follower
// fetches, and fetches on controller listeners (the metadata log), are not
// capped: replication must not starve behind clients (they are bounded by
// replica.fetch.response.max.bytes per follower).
// With nothing left, the cap is 0 and the first partition with data still
// answers one whole batch (KIP-74), so every consumer makes progress.
func (c *conn) limitFetch(f *kmsg.FetchRequest) (consumer bool, grant int64) {
	replica := f.ReplicaID
	if f.Version >= 15 {
		replica = f.ReplicaState.ID
	}
	if replica >= 0 || c.controller {
		return false, 0
	}
	for c.fetchUnsent.Load() > fetchUnsentPerConn {
		select {
		case <-c.fetchSent:
		case <-c.b.stop:
		}
		select {
		case <-c.b.stop:
			return true, 0 // the answer will not be written anyway
		default:
		}
	}
	// Not the sum of the partitions' limits: an incremental fetch
	// (KIP-227) names only the partitions that changed.
	want := min(int64(max(f.MaxBytes, 0)), maxFetchAnswerBytes)
	grant = c.b.fetchBytes.take(want)
	// Only the request's limit, which the handler applies over all
	// partitions: a partition's own limit may be remembered by its fetch
	// session (KIP-227) for later requests. At least 1: the handler reads
	// 0 as "no limit given".
	f.MaxBytes = int32(max(grant, 1))
	c.fetchUnsent.Add(grant)
	return true, grant
}

// fetchEncoded turns a fetch answer's grant into what its encoding really
// holds: the unused rest of the grant goes back at once, and the batch
// answered beyond a small grant (KIP-74) is counted, so the next fetches
// get less.
func (c *conn) fetchEncoded(s *slot, size int) {
	if !s.fetch {
		return
	}
	delta := int64(size) - s.fetchHeld
	switch {
	case delta < 0:
		c.b.fetchBytes.release(-delta)
	case delta > 0:
		c.b.fetchBytes.force(delta)
	}
	c.fetchUnsent.Add(delta)
	s.fetchHeld = int64(size)
}

// maxFetchAnswerBytes matches the fetch handler's own cap on one answer.
const maxFetchAnswerBytes = 64 << 20

// fetchDone gives back what a fetch answer held once it is written or
// dropped.
func (c *conn) fetchDone(s *slot) {
	if !s.fetch || s.fetchHeld == 0 {
		return
	}
	c.b.fetchBytes.release(s.fetchHeld)
	c.fetchUnsent.Add(-s.fetchHeld)
	s.fetchHeld = 0
	select {
	case c.fetchSent <- struct{}{}:
	default:
	}
}

// serve runs a handler. A panic in a handler is a bug; it is logged with
// its stack and costs this connection only, never the broker.
func (c *conn) serve(req *api.Request, s *slot) (keepOpen bool) {
	defer func() {
		if r := recover(); r != nil {
			c.b.logger(loggerConnection).Error("handler panic; closing connection", "api", kmsg.NameForKey(req.Body.Key()),
				"panic", r, "stack", string(debug.Stack()))
			keepOpen = false
			c.nc.Close() // a handler on its own goroutine cannot return false to the reader
			s.respond(nil)
		}
	}()
	start := time.Now()
	spec, _ := api.Lookup(req.Body.Key())
	quotas := c.startQuota(req, spec, start)
	defer quotas.served()
	c.b.api.Serve(req, func(resp kmsg.Response) {
		resp = quotas.throttle(resp)
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
		c.writeSlot(s, bw, &buf, &failed)
		c.fetchDone(s)
		c.pending.Add(-1)
	}
	if !failed {
		bw.Flush()
	}
}

// writeSlot waits for one answer and writes it (or drops it once the
// connection failed).
func (c *conn) writeSlot(s *slot, bw *bufio.Writer, bufp *[]byte, failedp *bool) {
	buf, failed := *bufp, *failedp
	defer func() { *bufp, *failedp = buf, failed }()
	select {
	case <-s.done:
	default:
		// Not answered yet (a long poll, a produce waiting for its
		// acks): the answers before it that wait in the buffer go now,
		// not once this one is ready.
		if !failed && bw.Buffered() > 0 {
			if err := bw.Flush(); err != nil {
				failed = true
				c.nc.Close() // unblocks the reader
			}
		}
	}
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
		return
	}
	switch {
	case failed:
		s.giveBack()
		return
	case s.raw && s.rawOK:
		buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(s.rawToken)))
		buf = append(buf, s.rawToken...)
	case s.resp == nil:
		return
	default:
		s.resp.SetVersion(s.version)
		if c.writeVectored(s, bw, &buf, &failed) {
			return
		}
		buf = wire.AppendResponse(wire.ResponseBuffer(buf, s.resp), s.hdr, s.resp)
	}
	s.resp = nil // the encoded copy is all that is needed now
	s.giveBack()
	c.fetchEncoded(s, len(buf))
	if _, err := bw.Write(buf); err != nil {
		failed = true
		c.nc.Close() // unblocks the reader
		return
	}
	c.lastActive.Store(time.Now().UnixNano())
	// Flush when nothing else is ready, so pipelined answers share
	// one write system call.
	if len(c.queue) == 0 {
		if err := bw.Flush(); err != nil {
			failed = true
			c.nc.Close()
		}
	}
	buf = wire.ReleaseResponseBuffer(buf) // a large fetch response's buffer is shared, not pinned here
}

// writeVectored writes a Fetch answer carrying at least
// wire.MinVectoredRecords of records with one vectored write (writev on a
// TCP connection) straight from the log's read buffers, instead of
// copying them into the response buffer first; the read buffers go back
// to the pool once written. It reports whether it took s (written, or the
// connection failed); false leaves s to the generic encoding.
func (c *conn) writeVectored(s *slot, bw *bufio.Writer, bufp *[]byte, failedp *bool) bool {
	fr, ok := s.resp.(*kmsg.FetchResponse)
	if !ok || wire.FetchRecordBytes(fr) < wire.MinVectoredRecords {
		return false
	}
	if !wire.AppendFetchVectored(&c.vec, *bufp, s.hdr, fr) {
		return false
	}
	*bufp = c.vec.Head
	s.resp = nil
	c.fetchEncoded(s, c.vec.Size)
	err := bw.Flush() // the answers buffered before it go first
	if err == nil {
		pieces := net.Buffers(c.vec.Pieces)
		_, err = pieces.WriteTo(c.nc)
	}
	clear(c.vec.Pieces) // no reference to the read buffers outlives them
	s.giveBack()
	if err != nil {
		*failedp = true
		c.nc.Close() // unblocks the reader
		return true
	}
	c.lastActive.Store(time.Now().UnixNano())
	return true
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
	c.pending.Add(1)
	select {
	case c.queue <- s:
	default:
		c.pending.Add(-1)
		c.nc.Close() // the queue is full: close at once
	}
}
