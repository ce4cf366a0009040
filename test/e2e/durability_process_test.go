package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/devcluster"
)

// skeinProcess is a real `skein server` process on 127.0.0.1 (a
// one-node internal/devcluster), for tests that kill -9 it. It restarts
// on the same data directory and ports.
type skeinProcess struct {
	t       testing.TB
	c       *devcluster.Cluster
	port    int // the PLAINTEXT port
	watcher *stderrWatcher
}

// processStartTimeout bounds how long a start may take to log "broker
// started" (recovery of a log written by the tests is quick).
const processStartTimeout = 30 * time.Second

// startSkeinProcess builds the binary if needed and starts a one-node
// cluster (broker and controller) process; it is killed when the test ends.
func startSkeinProcess(t testing.TB) *skeinProcess {
	t.Helper()
	p := &skeinProcess{t: t, port: freePort(t)}
	ports := devcluster.Ports{Client: p.port, Controller: freePort(t)}
	c, err := devcluster.New(devcluster.Config{Bin: skeinBinary(t), Dir: t.TempDir(), Brokers: 1,
		Ports: func(int) devcluster.Ports { return ports }, Props: map[string]string{"log.format": "json"},
		Output: func(int) io.Writer { return p.watcher }})
	if err != nil {
		t.Fatal(err)
	}
	p.c = c
	t.Cleanup(p.kill)
	p.start()
	return p
}

// addr is the client address of the process.
func (p *skeinProcess) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// start runs the server and waits for its "broker started" log line, which
// it prints once its client listener accepts connections. No polling: the
// line (or the process's exit) is the event.
func (p *skeinProcess) start() {
	p.t.Helper()
	p.watcher = &stderrWatcher{started: make(chan startedLine, 1)}
	if err := p.c.Start(0); err != nil {
		p.t.Fatalf("start skein: %v", err)
	}
	timer := time.NewTimer(processStartTimeout)
	defer timer.Stop()
	select {
	case line := <-p.watcher.started:
		port, err := portOfListener(line.Listeners, "PLAINTEXT")
		if err != nil {
			p.t.Fatalf("skein started, but: %v", err)
		}
		if port != p.port {
			p.t.Fatalf("skein started on port %d, want %d", port, p.port)
		}
	case <-p.c.Exited(0):
		p.t.Fatalf("skein exited before it started:\n%s", p.watcher.tail())
	case <-timer.C:
		p.t.Fatalf("skein did not start within %v:\n%s", processStartTimeout, p.watcher.tail())
	}
}

// kill sends SIGKILL (no chance to flush or close anything) and waits for
// the process to be gone. It does nothing if the process is not running.
func (p *skeinProcess) kill() { p.c.Kill(0) }

// startedLine is the part of the JSON "broker started" log line we read.
type startedLine struct {
	Msg       string   `json:"msg"`
	Listeners []string `json:"listeners"`
}

// stderrWatcher receives the process's stderr, keeps its tail for failure
// messages, and reports the "broker started" line once.
type stderrWatcher struct {
	started chan startedLine

	mu       sync.Mutex
	split    lineSplitter
	lines    []string
	reported bool
}

// stderrTailLines is how many lines of server output a failure shows.
const stderrTailLines = 40

func (w *stderrWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.split.feed(b, w.line)
	return len(b), nil
}

func (w *stderrWatcher) line(s string) {
	w.lines = append(w.lines, s)
	if len(w.lines) > stderrTailLines {
		w.lines = w.lines[len(w.lines)-stderrTailLines:]
	}
	if w.reported {
		return
	}
	var sl startedLine
	if json.Unmarshal([]byte(s), &sl) == nil && sl.Msg == "broker started" {
		w.reported = true
		w.started <- sl // buffered, sent once
	}
}

func (w *stderrWatcher) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// portOfListener finds NAME://host:port in a listener list.
func portOfListener(listeners []string, name string) (int, error) {
	for _, l := range listeners {
		rest, ok := strings.CutPrefix(l, name+"://")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return 0, fmt.Errorf("listener %q has no port", l)
		}
		var port int
		if _, err := fmt.Sscanf(rest[i+1:], "%d", &port); err != nil || port <= 0 {
			return 0, fmt.Errorf("listener %q: bad port", l)
		}
		return port, nil
	}
	return 0, fmt.Errorf("no %s listener in %v", name, listeners)
}
