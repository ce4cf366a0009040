package e2e

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/vfs"
)

// fuzzDrainTimeout bounds how long one fuzz input waits for the broker to
// finish answering. A long-poll Fetch may legitimately outlast it; the
// point is only to let handlers run before the liveness check.
const fuzzDrainTimeout = 200 * time.Millisecond

// FuzzConnection writes arbitrary bytes to a live broker's connection and
// then checks that the broker still answers on a fresh one. Unlike the
// decoder fuzzers this runs the real handlers on whatever decodes, so a
// request that panics outside the handler guard, deadlocks the connection
// machinery or kills the process fails here.
func FuzzConnection(f *testing.F) {
	for _, sp := range api.Specs() {
		for v := sp.MinVersion; v <= sp.MaxVersion; v++ {
			req := kmsg.RequestForKey(sp.Key)
			req.SetVersion(v)
			if fetch, ok := req.(*kmsg.FetchRequest); ok {
				fetch.MaxWaitMillis = 0 // keep seeds from long-polling
			}
			f.Add(rawRequestFrame(req, 1))
		}
	}
	f.Add(rawRequestFrame(produceRequest(9, -1, "fuzzed", 0, recordsBatch(2, 8)), 3))
	f.Add(rawRequestFrame(produceRequest(7, 0, "fuzzed", 0, recordsBatch(1, 8)), 4))
	f.Add(sizePrefix(1 << 31))

	tb := startBroker(f, withFS(vfs.NewMem()), withProp("socket.request.max.bytes", "1048576"))
	tb.createTopic("fuzzed", 2, nil)
	f.Fuzz(func(t *testing.T, input []byte) {
		nc, err := net.DialTimeout("tcp", tb.addr, rawIOTimeout)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		nc.SetDeadline(time.Now().Add(fuzzDrainTimeout))
		nc.Write(input)
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.CloseWrite() // the broker sees end of stream after the input
		}
		_, err = io.Copy(io.Discard, nc)
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, net.ErrClosed) {
			t.Logf("drain: %v", err) // resets are fine: the broker may close on us
		}
		nc.Close()

		c := dialRaw(t, tb.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		c.send(req, 9)
		if resp := c.receive(req, 9).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatalf("broker unhealthy after input: ApiVersions error %d", resp.ErrorCode)
		}
		c.nc.Close()
	})
}
