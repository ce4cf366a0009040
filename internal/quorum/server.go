package quorum

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/skein-log/skein/internal/wire"
	"go.etcd.io/raft/v3/raftpb"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	ClusterID     string
	MaxFrameBytes int32                       // DefaultMaxFrameBytes if 0
	Step          func(*raftpb.Message) error // usually Node.Step
	// OnReject, if set, is told about every frame refused (bad frame or
	// another cluster's) just before its connection is closed.
	OnReject func(err error)
	Logger   *slog.Logger
}

// maxServerConns bounds the connections a Server holds; Raft peers need one
// each.
const maxServerConns = 64

// Server is a standalone listener for Raft frames: every accepted connection
// carries frames from one peer, each handed to Step after the cluster id
// check. The broker serves Raft frames on its controller listener instead
// (through HandleRaftFrame); Server is for tests and tools.
type Server struct {
	ln    net.Listener
	cfg   ServerConfig
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	done  bool
}

// NewServer wraps a listener; call Serve to accept.
func NewServer(ln net.Listener, cfg ServerConfig) *Server {
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{ln: ln, cfg: cfg, conns: map[net.Conn]struct{}{}}
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close; it returns nil after Close.
func (s *Server) Serve() error {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done {
				return nil
			}
			return fmt.Errorf("raft server accept: %w", err)
		}
		if !s.track(conn) {
			conn.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(conn)
	}
}

// track registers conn, refusing it past the connection limit or after
// Close.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || len(s.conns) >= maxServerConns {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
}

// Close stops accepting, closes every connection and waits for their
// readers.
func (s *Server) Close() error {
	s.mu.Lock()
	s.done = true
	// The listener first, as a process exit does: a peer that sees its
	// connection end finds the port refusing (TCPTransport's watch).
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// serveConn reads frames until the peer goes away or sends something wrong.
func (s *Server) serveConn(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	for {
		frame, err := wire.ReadFrame(conn, s.cfg.MaxFrameBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Debug("raft connection ended", "remote", conn.RemoteAddr(), "err", err)
			}
			return
		}
		err = HandleRaftFrame(frame, s.cfg.ClusterID, s.cfg.Step)
		switch {
		case errors.Is(err, ErrClusterIDMismatch) || errors.Is(err, ErrBadFrame):
			s.cfg.Logger.Warn("raft frame rejected; closing connection", "remote", conn.RemoteAddr(), "err", err)
			if s.cfg.OnReject != nil {
				s.cfg.OnReject(err)
			}
			return
		case err != nil:
			// The node refused the message (busy, stopped, not for it):
			// Raft copes with lost messages.
			s.cfg.Logger.Debug("raft message not taken", "remote", conn.RemoteAddr(), "err", err)
		}
	}
}
