// Package admin serves a broker's operator endpoints over HTTP, on the
// addresses of admin.listeners: Prometheus /metrics, /healthz (the process
// is serving) and /readyz (the broker is registered, unfenced and caught up,
// so a load balancer or orchestrator may send it traffic).
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
)

// Limits of the admin listener. It serves scrapers and probes, a handful
// of clients, so the limits are small and a slow or hostile client cannot
// hold resources for long.
const (
	maxConnections     = 64
	maxHeaderBytes     = 16 << 10
	readHeaderTimeout  = 5 * time.Second
	readTimeout        = 10 * time.Second
	writeTimeout       = 30 * time.Second // a scrape of many series takes a while to write
	idleTimeout        = 60 * time.Second
	scrapeTimeout      = 20 * time.Second // below writeTimeout, so the error still reaches the client
	maxParallelScrapes = 4
	shutdownTimeout    = 5 * time.Second
)

// CheckFunc reports whether the broker passes a check: nil if it does,
// else an error whose text tells the operator why not. It is called on
// every probe, so it must be quick and safe for concurrent use.
type CheckFunc func() error

// Server is one admin HTTP listener.
type Server struct {
	addr string
	log  *slog.Logger
	http *http.Server
	mux  *http.ServeMux

	mu       sync.Mutex
	listener net.Listener  // set by Start
	served   chan struct{} // closed when Serve returns
}

// New prepares a server on addr ("host:port"; port 0 picks a free one)
// serving the metrics gathered from gatherer. A nil health or ready check
// always passes.
func New(addr string, gatherer prometheus.Gatherer, health, ready CheckFunc, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "admin")
	mux := newMux(gatherer, health, ready, log)
	return &Server{
		addr: addr,
		log:  log,
		mux:  mux,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
}

// EnablePprof serves Go's runtime profiles under /debug/pprof/
// (admin.pprof.enable). Call it before Start. A CPU profile or trace must
// ask for fewer seconds than the listener's 30 s write timeout
// (?seconds=20), or net/http/pprof refuses it.
func (s *Server) EnablePprof() {
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// Start listens on the server's address and serves in the background.
// Once it returns, Addr is the bound address.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("admin server already started")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("admin listener %s: %w", s.addr, err)
	}
	s.listener = ln
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		err := s.http.Serve(netutil.LimitListener(ln, maxConnections))
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("admin listener started", "addr", ln.Addr().String())
	return nil
}

// Addr is the bound address after Start, else the configured one.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return s.listener.Addr().String()
	}
	return s.addr
}

// Close stops the server: it stops accepting, lets requests in progress
// finish for a few seconds, then closes what is left. It waits until the
// serving goroutine has returned. Calling it more than once, or without
// Start, is harmless.
func (s *Server) Close() error {
	s.mu.Lock()
	served := s.served
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.http.Close())
	}
	if served != nil {
		<-served
	}
	if err != nil {
		return fmt.Errorf("closing admin listener %s: %w", s.addr, err)
	}
	return nil
}
