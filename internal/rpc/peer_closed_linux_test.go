package rpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/skein-log/skein/internal/testport"
)

// TestTCPPeerClosed: the socket's state tells that the peer closed the
// connection, and not before it did.
func TestTCPPeerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", testport.One(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	if tcpPeerClosed(client) {
		t.Fatal("open connection reported closed by the peer")
	}
	server.Close()
	// The FIN has arrived once a read sees the end of the stream.
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the peer closed: %v, want EOF", err)
	}
	if !tcpPeerClosed(client) {
		t.Fatal("connection the peer closed not reported closed")
	}
}
