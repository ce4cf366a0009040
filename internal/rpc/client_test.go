package rpc_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/rpc"
)

func startBroker(t *testing.T) string {
	t.Helper()
	cfg, err := config.NewBroker(map[string]string{
		"node.id":   "1",
		"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.dirs":  filepath.Join(t.TempDir(), "data"),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := node.New(cfg, node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Addr("PLAINTEXT")
}

func TestPipelinedRequestsGetTheirOwnAnswers(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, addr, "rpc-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(flexible bool) {
			defer wg.Done()
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 0
			if flexible {
				req.Version = 3
				req.ClientSoftwareName = "rpc-test"
				req.ClientSoftwareVersion = "1"
			}
			resp, err := c.Request(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			if got := resp.(*kmsg.ApiVersionsResponse); got.ErrorCode != 0 || len(got.ApiKeys) == 0 {
				t.Errorf("unexpected answer %+v", got)
			}
		}(i%2 == 0)
	}
	wg.Wait()
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	resp, err := c.Request(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.(*kmsg.MetadataResponse); len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 {
		t.Fatalf("unexpected metadata %+v", m)
	}
}

func TestCallsFailWhenThePeerCloses(t *testing.T) {
	addr := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, addr, "rpc-test")
	if err != nil {
		t.Fatal(err)
	}
	// Fetch v3 predates record batches and is not served; the broker
	// closes the connection rather than guess at the body.
	old := kmsg.NewPtrFetchRequest()
	old.Version = 3
	if _, err := c.Request(ctx, old); err == nil {
		t.Fatal("a request the peer answered by closing returned no error")
	}
	<-c.Done()
	if _, err := c.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Fatal("request on a broken connection succeeded")
	}
}

func TestDialFromBindsTheLocalAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rpc.DialFrom(ctx, net.ParseIP("127.0.0.7"), l.Addr().String(), "rpc-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case sc := <-accepted:
		defer sc.Close()
		if host, _, _ := net.SplitHostPort(sc.RemoteAddr().String()); host != "127.0.0.7" {
			t.Fatalf("connection came from %s, want 127.0.0.7", host)
		}
	case <-ctx.Done():
		t.Fatal("no connection accepted")
	}
}
