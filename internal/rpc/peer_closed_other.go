//go:build !linux

package rpc

import "net"

// tcpPeerClosed is known only on Linux; elsewhere a closed peer is seen
// when the connection's reader gets to it.
func tcpPeerClosed(net.Conn) bool { return false }
