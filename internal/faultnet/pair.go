package faultnet

import (
	"net"
	"sync"
)

// pair is one proxied connection: the accepted client side and, once
// connected, the server side.
type pair struct {
	link   Link
	client net.Conn

	mu     sync.Mutex
	server net.Conn
	closed bool
	done   chan struct{} // closed by close
}

func newPair(client net.Conn, link Link) *pair {
	return &pair{client: client, link: link, done: make(chan struct{})}
}

// setServer attaches the server side; false if the pair closed meanwhile.
func (pr *pair) setServer(c net.Conn) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return false
	}
	pr.server = c
	return true
}

func (pr *pair) isClosed() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.closed
}

// abort closes both sides with a reset (SO_LINGER 0) rather than a FIN:
// to a client it looks like a refused or broken connection, which clients
// retry, where an orderly close right after connecting looks like a
// misconfigured peer (franz-go, for one, then gives up on the request).
func (pr *pair) abort() {
	pr.mu.Lock()
	server := pr.server
	pr.mu.Unlock()
	for _, c := range []net.Conn{pr.client, server} {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	}
	pr.close()
}

// close closes both sides once.
func (pr *pair) close() {
	pr.mu.Lock()
	if pr.closed {
		pr.mu.Unlock()
		return
	}
	pr.closed = true
	close(pr.done)
	server := pr.server
	pr.mu.Unlock()
	pr.client.Close()
	if server != nil {
		server.Close()
	}
}
