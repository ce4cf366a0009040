package quorum

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/skein-log/skein/internal/config"
	"go.etcd.io/raft/v3/raftpb"
)

// Reporter receives delivery outcomes from a Transport. Node implements it;
// its methods never block.
type Reporter interface {
	// ReportUnreachable: a message to id could not be sent.
	ReportUnreachable(id uint64)
	// ReportSnapshot: a MsgSnap to id was written out, or was lost.
	ReportSnapshot(id uint64, delivered bool)
	// ReportDown: id's process is gone: the connection to it closed and
	// nothing listens at its address any more (a refused connection), so
	// it will send nothing until it restarts.
	ReportDown(id uint64)
}

// Transport carries Raft messages to peers. Send must never block: the Raft
// loop calls it, and Raft retransmits whatever is lost. Inbound messages
// arrive through Node.Step (see HandleRaftFrame and Server).
type Transport interface {
	// Start is called once, before the first Send.
	Start(r Reporter) error
	Send(msgs []*raftpb.Message)
	Close() error
}

// TCPTransportConfig configures a TCPTransport. Zero values take defaults.
type TCPTransportConfig struct {
	ClusterID string
	Self      uint64         // this node's Raft id (skipped among Peers)
	Peers     []config.Voter // controller.quorum.voters (a dynamic quorum: SetPeers)
	LocalAddr net.IP         // local IP of connections to peers (nil: the OS chooses)
	// Sender, when set, is this node's own controller endpoint, written
	// into every frame (version 1) so a node not yet in a dynamic quorum's
	// configuration can answer. Empty in a static quorum.
	Sender string
	// Secure, when set, secures each new connection to a peer before
	// any frame (TLS, a SASL login: the controller listener is not
	// PLAINTEXT); nil dials in plaintext.
	Secure func(ctx context.Context, conn net.Conn, addr string) (net.Conn, error)

	QueueLen      int           // messages queued per peer before dropping (1024)
	MaxFrameBytes int           // larger messages are dropped (DefaultMaxFrameBytes)
	DialTimeout   time.Duration // per connection attempt (1 s)
	WriteTimeout  time.Duration // per batch of frames (5 s)
	MinBackoff    time.Duration // first reconnect delay (50 ms), doubling
	MaxBackoff    time.Duration // up to this (2 s)
	Logger        *slog.Logger
}

func (c TCPTransportConfig) withDefaults() TCPTransportConfig {
	if c.QueueLen <= 0 {
		c.QueueLen = 1024
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 50 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(2*time.Second, c.MinBackoff)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// maxRetainedBufferBytes bounds the encoding buffer a peer keeps between
// batches.
const maxRetainedBufferBytes = 1 << 20

// maxBatchMessages bounds how many queued messages one write carries.
const maxBatchMessages = 64

// TCPTransport sends Raft frames over one outbound TCP connection per peer.
// Each peer has a bounded queue drained by its own goroutine, which dials
// (with backoff after failures), writes and reports losses; a full queue
// drops the message.
type TCPTransport struct {
	cfg      TCPTransportConfig
	mu       sync.Mutex // guards peers and reporter
	peers    map[uint64]*peer
	reporter Reporter
	ctx      context.Context // cancelled by Close: aborts dials
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
}

// peer is the outbound half towards one voter.
type peer struct {
	t        *TCPTransport
	id       uint64
	addr     string
	queue    chan *raftpb.Message
	reporter Reporter
	logger   *slog.Logger
	ctx      context.Context // cancelled when the peer leaves or the transport closes
	cancel   context.CancelFunc
}

// NewTCPTransport builds a transport to every voter other than Self.
func NewTCPTransport(cfg TCPTransportConfig) (*TCPTransport, error) {
	cfg = cfg.withDefaults()
	if len(cfg.ClusterID) > maxClusterIDBytes {
		return nil, fmt.Errorf("quorum transport: cluster id of %d bytes", len(cfg.ClusterID))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &TCPTransport{cfg: cfg, peers: map[uint64]*peer{}, ctx: ctx, cancel: cancel}
	for _, v := range cfg.Peers {
		id := RaftID(v.ID)
		if id == cfg.Self {
			continue
		}
		if _, dup := t.peers[id]; dup {
			cancel()
			return nil, fmt.Errorf("quorum transport: voter %d listed twice", v.ID)
		}
		t.peers[id] = t.newPeer(id, v.Addr())
	}
	return t, nil
}

func (t *TCPTransport) newPeer(id uint64, addr string) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &peer{t: t, id: id, addr: addr, queue: make(chan *raftpb.Message, t.cfg.QueueLen),
		logger: t.cfg.Logger.With("peer", NodeID(id), "addr", addr), ctx: ctx, cancel: cancel}
}

// Start launches one sender goroutine per peer.
func (t *TCPTransport) Start(r Reporter) error {
	if r == nil {
		return errors.New("quorum transport: nil reporter")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reporter = r
	for _, p := range t.peers {
		t.startPeer(p)
	}
	return nil
}

func (t *TCPTransport) startPeer(p *peer) {
	p.reporter = t.reporter
	t.wg.Add(1)
	go p.run()
}

// SetPeers makes the peers exactly addrs (Raft id to host:port, this node
// skipped): a dynamic quorum's members changed. A peer whose address is
// unchanged keeps its connection and queue.
func (t *TCPTransport) SetPeers(addrs map[uint64]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.peers {
		if addr, ok := addrs[id]; !ok || addr != p.addr {
			p.cancel()
			delete(t.peers, id)
		}
	}
	for id, addr := range addrs {
		if _, ok := t.peers[id]; ok || id == t.cfg.Self {
			continue
		}
		p := t.newPeer(id, addr)
		t.peers[id] = p
		if t.reporter != nil {
			t.startPeer(p)
		}
	}
}

// Send queues each message for its peer, dropping it (and telling Raft) when
// the queue is full or the peer unknown.
func (t *TCPTransport) Send(msgs []*raftpb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		p := t.peers[m.GetTo()]
		if p == nil {
			t.cfg.Logger.Warn("raft message for an unknown peer dropped", "to", m.GetTo(), "type", m.GetType())
			continue
		}
		select {
		case p.queue <- m:
		default:
			p.lost([]*raftpb.Message{m})
		}
	}
}

// Close stops the senders and closes their connections.
func (t *TCPTransport) Close() error {
	t.once.Do(func() {
		t.cancel()
		t.wg.Wait()
	})
	return nil
}

// lost tells Raft that messages to p did not leave.
func (p *peer) lost(msgs []*raftpb.Message) {
	if p.reporter == nil {
		return
	}
	p.reporter.ReportUnreachable(p.id)
	for _, m := range msgs {
		if m.GetType() == raftpb.MsgSnap {
			p.reporter.ReportSnapshot(p.id, false)
		}
	}
}

// run sends queued messages until the transport closes.
func (p *peer) run() {
	defer p.t.wg.Done()
	var (
		conn    net.Conn
		unwatch func() bool     // stops closing conn when the transport closes
		closed  <-chan struct{} // closed when the peer closes conn
		w       *bufio.Writer
		buf     []byte
		backoff = p.t.cfg.MinBackoff
		retryAt time.Time
		failing bool // logged the current outage already
		// refused: the last dial was refused, so nothing listens at
		// the peer's address (see downAgain).
		refused bool
	)
	defer func() {
		if conn != nil {
			unwatch()
			conn.Close()
		}
	}()
	for {
		var batch []*raftpb.Message
		select {
		case <-p.ctx.Done():
			return
		case m := <-p.queue:
			batch = append(batch, m)
		}
	drain:
		for len(batch) < maxBatchMessages {
			select {
			case m := <-p.queue:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		if cap(buf) > maxRetainedBufferBytes {
			buf = nil // a snapshot went out; do not pin its buffer
		}
		buf, batch = p.encode(buf[:0], batch)
		if len(batch) == 0 {
			continue
		}
		if conn != nil {
			select {
			case <-closed:
				// The peer closed it (it died or restarted, or
				// closed an idle connection): writing there would
				// lose the batch without an error, so dial afresh.
				unwatch()
				conn.Close()
				conn, w = nil, nil
			default:
			}
		}
		if conn == nil {
			if time.Now().Before(retryAt) {
				p.lost(batch) // still backing off: Raft will retry later
				p.downAgain(refused)
				continue
			}
			c, err := p.dial()
			if err != nil {
				if !failing {
					p.logger.Warn("raft peer unreachable", "err", err)
					failing = true
				}
				retryAt = time.Now().Add(backoff)
				backoff = min(2*backoff, p.t.cfg.MaxBackoff)
				p.lost(batch)
				refused = errors.Is(err, syscall.ECONNREFUSED)
				p.downAgain(refused)
				continue
			}
			refused = false
			// Close must not wait out a write deadline on a stuck peer.
			conn, w, unwatch = c, bufio.NewWriterSize(c, 64<<10), context.AfterFunc(p.ctx, func() { c.Close() })
			closed = p.watch(c)
		}
		if err := p.write(conn, w, buf); err != nil {
			if !failing {
				p.logger.Warn("raft peer connection lost", "err", err)
				failing = true
			}
			unwatch()
			conn.Close()
			conn, w = nil, nil
			p.lost(batch)
			p.t.wg.Add(1)
			go func() {
				defer p.t.wg.Done()
				p.probeDown()
			}()
			continue
		}
		if failing {
			p.logger.Info("raft peer reachable again")
			failing = false
		}
		backoff, retryAt = p.t.cfg.MinBackoff, time.Time{}
		for _, m := range batch {
			if m.GetType() == raftpb.MsgSnap {
				p.reporter.ReportSnapshot(p.id, true)
			}
		}
	}
}

// watch reads conn until it ends (the peer sends nothing on it: a read
// returns only when the peer closes it or conn is closed here) and closes
// the returned channel then. A peer whose process died closes its
// sockets, so this notices at once what a write would only notice one
// lost batch later; and if nothing listens at the peer's address any
// more, the Reporter hears that the peer is down.
func (p *peer) watch(conn net.Conn) <-chan struct{} {
	closed := make(chan struct{})
	p.t.wg.Add(1)
	go func() {
		defer p.t.wg.Done()
		_, err := io.Copy(io.Discard, conn)
		close(closed)
		if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
			return // closed here
		}
		p.probeDown()
	}()
	return closed
}

// probeDown reports the peer down if its port refuses connections, after
// its connection ended (watch) or a write to it failed (run). A write can
// fail (EPIPE, ECONNRESET) before watch has seen the end; run then closes
// the connection, which ends watch as if it had been closed here, so run
// probes itself: without a report a follower of the dead leader that has
// nothing more to send it would never hear of the death
// (TestDeadLeaderReplacedAtOnce failed so under load).
func (p *peer) probeDown() {
	// A process being killed closes its sockets in no set order: its
	// listener may still take a connection for a moment after this one
	// ended, so a probe that connects is tried again.
	for try := range downProbes {
		if try > 0 {
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(downProbeGap):
			}
		}
		if p.refused() {
			p.logger.Info("raft peer closed its connection and its port refuses connections: treating it as down")
			if p.reporter != nil {
				p.reporter.ReportDown(p.id)
			}
			return
		}
	}
}

// downAgain reports the peer down once more when a message to it could
// not leave because nothing listens at its address. watch reports a death
// once, when the connection ends, but a message the peer sent just before
// it died can still be read from its own connection after that: a
// follower that forgot its dead leader then follows it again, answers it,
// and, with an election timeout long enough, nothing would ever make it
// forget again (TestDeadLeaderReplacedAtOnce failed so under load). The
// answer's dial is refused, which says again that the peer is gone. A
// report about a peer that is not the leader changes nothing (Core.PeerDown).
func (p *peer) downAgain(refused bool) {
	if refused && p.reporter != nil {
		p.reporter.ReportDown(p.id)
	}
}

// downProbes and downProbeGap bound how a peer whose connection ended is
// probed: a live peer (one that closed an idle connection) costs this
// many connections, a dead one is known within downProbeGap or two.
const (
	downProbes   = 3
	downProbeGap = 20 * time.Millisecond
)

// refused reports whether a connection to the peer's address is refused:
// no process listens there.
func (p *peer) refused() bool {
	d := net.Dialer{Timeout: p.t.cfg.DialTimeout}
	if p.t.cfg.LocalAddr != nil {
		d.LocalAddr = &net.TCPAddr{IP: p.t.cfg.LocalAddr}
	}
	c, err := d.DialContext(p.ctx, "tcp", p.addr)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// encode appends the frames of msgs to buf, dropping (and reporting) any
// that cannot be encoded or exceed the frame limit. It returns the messages
// kept.
func (p *peer) encode(buf []byte, msgs []*raftpb.Message) ([]byte, []*raftpb.Message) {
	kept := msgs[:0]
	for _, m := range msgs {
		start := len(buf)
		next, err := AppendRaftFrameFrom(buf, p.t.cfg.ClusterID, p.t.cfg.Sender, m)
		if err == nil && len(next)-start > p.t.cfg.MaxFrameBytes {
			err = fmt.Errorf("%d-byte frame exceeds the %d-byte limit", len(next)-start, p.t.cfg.MaxFrameBytes)
		}
		if err != nil {
			p.logger.Error("raft message dropped", "type", m.GetType(), "err", err)
			buf = next[:start]
			p.lost([]*raftpb.Message{m})
			continue
		}
		buf = next
		kept = append(kept, m)
	}
	return buf, kept
}

func (p *peer) dial() (net.Conn, error) {
	d := net.Dialer{Timeout: p.t.cfg.DialTimeout}
	if p.t.cfg.LocalAddr != nil {
		d.LocalAddr = &net.TCPAddr{IP: p.t.cfg.LocalAddr}
	}
	conn, err := d.DialContext(p.ctx, "tcp", p.addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", p.addr, err)
	}
	if p.t.cfg.Secure == nil {
		return conn, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.t.cfg.DialTimeout)
	defer cancel()
	secured, err := p.t.cfg.Secure(ctx, conn, p.addr)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("securing the connection to %s: %w", p.addr, err)
	}
	return secured, nil
}

func (p *peer) write(conn net.Conn, w *bufio.Writer, frames []byte) error {
	if err := conn.SetWriteDeadline(time.Now().Add(p.t.cfg.WriteTimeout)); err != nil {
		return err
	}
	if _, err := w.Write(frames); err != nil {
		return err
	}
	return w.Flush()
}
