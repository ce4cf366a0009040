package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
	"github.com/skein-log/skein/internal/vfs"
)

// testBroker is an in-process broker on 127.0.0.1 with an ephemeral port
// and its own data directory, restartable on the same data.
type testBroker struct {
	t       testing.TB
	props   map[string]string
	fs      vfs.FS
	b       *node.Broker
	addr    string
	dataDir string
	// logOut, if set, also receives the broker's log (debug and above,
	// unless the test sets log.level).
	logOut io.Writer
	// authClock, if set, is the broker's node.Options.AuthClock.
	authClock func() time.Time
}

// brokerOption changes a test broker's properties or seams.
type brokerOption func(*testBroker)

// withProp sets a broker property.
func withProp(key, value string) brokerOption {
	return func(tb *testBroker) { tb.props[key] = value }
}

// withFS runs the broker on another filesystem (vfs.Mem for disk faults).
func withFS(fs vfs.FS) brokerOption {
	return func(tb *testBroker) { tb.fs = fs }
}

// withAuthClock judges the broker's SASL sessions by clock instead of the
// wall clock (node.Options.AuthClock).
func withAuthClock(clock *manualClock) brokerOption {
	return func(tb *testBroker) { tb.authClock = clock.Now }
}

// manualClock is a clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: time.Now()} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// startBroker starts a broker and stops it when the test ends.
func startBroker(t testing.TB, opts ...brokerOption) *testBroker {
	t.Helper()
	tb := &testBroker{t: t, dataDir: t.TempDir()}
	tb.props = map[string]string{
		"node.id": "1",
		// A reserved port, so that a restart comes back on the same
		// address without racing other processes for it.
		"listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:0", freePort(t)),
		"log.dirs":  filepath.Join(tb.dataDir, "broker-1"),
	}
	for _, o := range opts {
		o(tb)
	}
	tb.start()
	t.Cleanup(func() { tb.stop() })
	return tb
}

func (tb *testBroker) start() {
	tb.t.Helper()
	if _, set := tb.props["log.level"]; tb.logOut != nil && !set {
		// The node's levels filter its lines, not the handler's: the
		// root logger starts at log.level.
		tb.props["log.level"] = "debug"
	}
	cfg, err := config.NewBroker(tb.props)
	if err != nil {
		tb.t.Fatalf("broker config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if tb.logOut != nil {
		out := tb.logOut
		if testing.Verbose() {
			out = io.MultiWriter(out, os.Stderr)
		}
		logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tb.b = node.New(cfg, node.Options{FS: tb.fs, Logger: logger, AuthClock: tb.authClock})
	if err := tb.b.Start(); err != nil {
		tb.t.Fatalf("start broker: %v", err)
	}
	tb.addr = tb.b.Addr("PLAINTEXT")
}

func (tb *testBroker) stop() {
	if tb.b != nil {
		if err := tb.b.Close(); err != nil {
			tb.t.Errorf("close broker: %v", err)
		}
		tb.b = nil
	}
}

// restart closes the broker cleanly and starts it again on the same data
// and address.
func (tb *testBroker) restart() {
	tb.t.Helper()
	tb.stop()
	tb.start()
}

// client returns a franz-go client seeded with the broker, closed at the
// end of the test.
func (tb *testBroker) client(opts ...kgo.Opt) *kgo.Client {
	tb.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tb.addr)}, opts...)...)
	if err != nil {
		tb.t.Fatalf("client: %v", err)
	}
	tb.t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic and fails the test on error.
func (tb *testBroker) createTopic(name string, partitions int32, configs map[string]*string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(tb.client())
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		tb.t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

// skeinBinary builds cmd/skein once per test binary run, for tests that
// need real processes (kill -9).
func skeinBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "skein-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "skein")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/skein-log/skein/cmd/skein")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatalf("build skein: %v", binErr)
	}
	return binPath
}

// requireCommand skips a test when an external client is missing, unless
// CI=true, where a missing client is a broken setup.
func requireCommand(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if strings.EqualFold(os.Getenv("CI"), "true") {
			t.Fatalf("%s is not installed; .ci/run installs it", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}
