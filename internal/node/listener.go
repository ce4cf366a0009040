package node

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/connlimit"
)

func (b *Broker) listen() error {
	b.lnMu.Lock()
	defer b.lnMu.Unlock()
	for _, l := range b.cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			for _, open := range b.listeners {
				open.Close()
			}
			return fmt.Errorf("listener %s: %w", l.String(), err)
		}
		b.listeners[l.Name] = ln
	}
	if len(b.listeners) == 0 {
		return errors.New("no client listener configured in listeners")
	}
	return nil
}

// closeClientListeners stops accepting client connections; existing ones
// stay open.
func (b *Broker) closeClientListeners() {
	b.lnMu.Lock()
	defer b.lnMu.Unlock()
	for name, ln := range b.listeners {
		if !b.isControllerListener(name) {
			ln.Close()
		}
	}
}

// drainWriteBound bounds how long a clean stop lets a connection write
// the answers already given: a client that reads them takes far less (the
// socket buffers hold them), and one that does not read must not hold up
// the stop.
const drainWriteBound = time.Second

// drainConns ends every connection after the answers ready for it are
// written: each reader stops at once (a read deadline in the past) and the
// writer then sends what is answered and drops what is not, as when a
// client goes away (conn.writeLoop). Closing the sockets outright, as
// closeListeners does, could cut off answers already given, such as the
// storage errors held for a failed disk's handover. It returns when every
// connection is closed.
func (b *Broker) drainConns() {
	b.lnMu.Lock()
	for _, ln := range b.listeners {
		ln.Close()
	}
	b.draining.Store(true)
	now := time.Now()
	for c := range b.conns {
		c.SetWriteDeadline(now.Add(drainWriteBound))
		c.SetReadDeadline(now)
	}
	b.lnMu.Unlock()
	b.connWG.Wait()
}

func (b *Broker) closeListeners() {
	b.lnMu.Lock()
	for _, ln := range b.listeners {
		ln.Close()
	}
	for c := range b.conns {
		c.Close()
	}
	b.lnMu.Unlock()
}

func (b *Broker) accept(name string, ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and similar: back off briefly
			// rather than spin.
			b.log.Warn("accept failed", "listener", name, "err", err)
			select {
			case <-b.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		ip := hostOf(nc.RemoteAddr())
		if !b.admitConn(name, ip, nc) {
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			tc.SetKeepAlive(true)
			if n := b.cfg.SocketSendBufferBytes; n >= 0 {
				tc.SetWriteBuffer(n)
			}
			if n := b.cfg.SocketReceiveBufferBytes; n >= 0 {
				tc.SetReadBuffer(n)
			}
		}
		b.metrics.ConnectionOpened(name)
		go func() {
			defer b.untrackConn(nc, name, ip)
			defer b.metrics.ConnectionClosed(name)
			served := nc
			if _, ok := b.tlsServers[name]; ok {
				tc, ok := b.startTLS(nc, name)
				if !ok {
					nc.Close()
					return
				}
				served = tc
			}
			b.serveConn(served, name)
		}()
	}
}

// admitConn asks the connection limits about a new connection and tracks
// it if it may stay. A creation rate over its limit makes the accept loop
// wait here, as Kafka's acceptor throttles (KIP-612): later connections
// stay in the kernel's accept queue meanwhile.
func (b *Broker) admitConn(listener, ip string, nc net.Conn) bool {
	for {
		b.lnMu.Lock()
		select {
		case <-b.stop:
			b.lnMu.Unlock()
			return false
		default:
		}
		d := b.limits.Admit(listener, ip, time.Now())
		if d.Accept {
			b.conns[nc] = struct{}{}
			b.connWG.Add(1)
			b.lnMu.Unlock()
			return true
		}
		b.lnMu.Unlock()
		if d.Refuse != "" {
			b.metrics.ConnectionRefused(listener, string(d.Refuse))
			if n, ok := b.refusals.note(string(d.Refuse), time.Now()); ok {
				b.log.Warn("refusing connections", "listener", listener, "reason", d.Refuse,
					"last_remote", nc.RemoteAddr().String(), "refused_since_last_report", n)
			}
			return false
		}
		select {
		case <-b.stop:
			return false
		case <-time.After(d.Wait):
		}
	}
}

func (b *Broker) untrackConn(nc net.Conn, listener, ip string) {
	b.lnMu.Lock()
	delete(b.conns, nc)
	b.limits.Release(listener, ip)
	b.lnMu.Unlock()
	b.connWG.Done()
}

// connLimits turns the configuration into the limiter's terms. Controller
// listeners are protected from the broker-wide limits and the per-IP one.
// The inter-broker listener is protected from the broker-wide limits when
// it is a listener of its own, as Kafka's is; when it is also the clients'
// only listener, exempting it would leave max.connections meaning nothing,
// so there brokers are kept in by max.connections.per.ip instead (one
// flooding address cannot use up another's allowance).
func connLimits(cfg *config.Broker) connlimit.Config {
	c := connlimit.Config{
		Max:            cfg.MaxConnections,
		PerIP:          cfg.MaxConnectionsPerIP,
		PerIPOverrides: cfg.MaxConnectionsPerIPOverrides,
		CreationRate:   cfg.MaxConnectionCreationRate,
		Listeners:      map[string]connlimit.ListenerLimits{},
		Protected:      map[string]bool{},
		Unmetered:      map[string]bool{},
	}
	for _, l := range cfg.Listeners {
		c.Listeners[l.Name] = connlimit.ListenerLimits{
			Max: cfg.ListenerMaxConnections[l.Name], CreationRate: cfg.ListenerConnectionCreationRate[l.Name],
		}
		if cfg.IsControllerListener(l.Name) {
			c.Protected[l.Name] = true
			c.Unmetered[l.Name] = true
		}
	}
	brokerListeners := 0
	for _, l := range cfg.Listeners {
		if !cfg.IsControllerListener(l.Name) {
			brokerListeners++
		}
	}
	if cfg.InterBrokerListenerName != "" && brokerListeners > 1 {
		c.Protected[cfg.InterBrokerListenerName] = true
	}
	return c
}

// refusalLog bounds the log lines about refused connections: one per
// reason per refusalLogEvery, with how many were refused in between, so a
// flood of connections cannot flood the log too.
type refusalLog struct {
	mu    sync.Mutex
	last  map[string]time.Time
	count map[string]int
}

const refusalLogEvery = 10 * time.Second

func (r *refusalLog) note(reason string, now time.Time) (refused int, report bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, r.count = map[string]time.Time{}, map[string]int{}
	}
	r.count[reason]++
	if last, ok := r.last[reason]; ok && now.Sub(last) < refusalLogEvery {
		return 0, false
	}
	r.last[reason] = now
	refused = r.count[reason]
	r.count[reason] = 0
	return refused, true
}
