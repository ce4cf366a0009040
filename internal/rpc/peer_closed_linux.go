package rpc

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpPeerClosed reports whether the kernel has seen the peer end nc: a
// FIN (CLOSE_WAIT, LAST_ACK) or a reset (CLOSE). It asks the socket's
// state (TCP_INFO) rather than reading, so it knows as soon as the packet
// arrived, before any goroutine reading nc has been scheduled.
func tcpPeerClosed(nc net.Conn) bool {
	for {
		u, ok := nc.(interface{ NetConn() net.Conn }) // TLS
		if !ok {
			break
		}
		nc = u.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	var state uint8
	var infoErr error
	if err := raw.Control(func(fd uintptr) {
		var info *unix.TCPInfo
		info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if infoErr == nil {
			state = info.State
		}
	}); err != nil || infoErr != nil {
		return false
	}
	switch state {
	case unix.BPF_TCP_CLOSE_WAIT, unix.BPF_TCP_LAST_ACK, unix.BPF_TCP_CLOSE:
		return true
	}
	return false
}
