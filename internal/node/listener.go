package node

import (
	"errors"
	"fmt"
	"net"
	"time"
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
		if !b.trackConn(nc) {
			select {
			case <-b.stop:
			default:
				b.log.Warn("refusing connection: max.connections reached", "remote", nc.RemoteAddr().String())
			}
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			tc.SetKeepAlive(true)
		}
		b.metrics.ConnectionOpened(name)
		go func() {
			defer b.untrackConn(nc)
			defer b.metrics.ConnectionClosed(name)
			b.serveConn(nc, name)
		}()
	}
}

func (b *Broker) trackConn(nc net.Conn) bool {
	b.lnMu.Lock()
	defer b.lnMu.Unlock()
	select {
	case <-b.stop:
		return false
	default:
	}
	if b.cfg.MaxConnections > 0 && len(b.conns) >= b.cfg.MaxConnections {
		return false
	}
	b.conns[nc] = struct{}{}
	b.connWG.Add(1)
	return true
}

func (b *Broker) untrackConn(nc net.Conn) {
	b.lnMu.Lock()
	delete(b.conns, nc)
	b.lnMu.Unlock()
	b.connWG.Done()
}
