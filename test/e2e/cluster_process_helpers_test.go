package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/devcluster"
)

// processCluster is n real `skein server` processes on 127.0.0.1, every
// one broker and controller, for faults an in-process broker cannot
// suffer: SIGKILL, and SIGSTOP (a process that stops fetching and
// heartbeating but keeps its sockets open). The processes are the ones
// `skein dev` runs (internal/devcluster), on ports of the test's own.
type processCluster struct {
	t     testing.TB
	c     *devcluster.Cluster
	addrs []string      // PLAINTEXT addresses, fixed across restarts
	admin []string      // admin HTTP addresses (/metrics), fixed across restarts
	logs  []*logWatcher // each node's log since its last start
}

// processRegisterTimeout bounds how long a node may take to register
// with the controller after it starts.
const processRegisterTimeout = 30 * time.Second

// processClusterProps are the properties every node runs with: JSON logs
// for the watchers, failure detection shortened from Kafka's defaults so
// faults show in seconds, and Kafka's own defaults where `skein dev`
// chooses others for a person's convenience.
var processClusterProps = map[string]string{
	"log.format":                       "json",
	"broker.heartbeat.interval.ms":     "200",
	"broker.session.timeout.ms":        "3000",
	"replica.lag.time.max.ms":          "2000",
	"replica.fetch.wait.max.ms":        "100",
	"offsets.topic.replication.factor": "3",
	"default.replication.factor":       "1",
	"min.insync.replicas":              "1",
}

// startProcessCluster starts n nodes and waits until each registered with
// the controller. extra properties override the defaults on every node.
func startProcessCluster(t testing.TB, n int, extra map[string]string) *processCluster {
	t.Helper()
	pc := &processCluster{t: t, logs: make([]*logWatcher, n)}
	ports := make([]devcluster.Ports, n)
	for i := range n {
		ports[i] = devcluster.Ports{Client: freePort(t), Controller: freePort(t), Admin: freePort(t)}
		pc.addrs = append(pc.addrs, fmt.Sprintf("127.0.0.1:%d", ports[i].Client))
		pc.admin = append(pc.admin, fmt.Sprintf("127.0.0.1:%d", ports[i].Admin))
	}
	props := maps.Clone(processClusterProps)
	maps.Copy(props, extra)
	c, err := devcluster.New(devcluster.Config{Bin: skeinBinary(t), Dir: t.TempDir(), Brokers: n, ClusterID: "skein-process-cluster",
		Ports: func(i int) devcluster.Ports { return ports[i] }, Props: props,
		Output: func(i int) io.Writer { return pc.logs[i] }})
	if err != nil {
		t.Fatal(err)
	}
	pc.c = c
	t.Cleanup(func() {
		for i := range n {
			c.Kill(i)
		}
	})
	for i := range n {
		pc.launch(i)
	}
	for i := range n {
		pc.awaitRegistered(i)
	}
	return pc
}

// launch starts node i without waiting for it.
func (pc *processCluster) launch(i int) {
	pc.t.Helper()
	pc.logs[i] = newLogWatcher()
	if testing.Verbose() {
		// Like the in-process brokers, show the nodes' logs with -v.
		pc.logs[i].echo = os.Stderr
	}
	if err := pc.c.Start(i); err != nil {
		pc.t.Fatal(err)
	}
}

// awaitRegistered waits for node i's "registered with the controller" log
// line (the event: its client listener accepts connections from then on).
func (pc *processCluster) awaitRegistered(i int) {
	pc.t.Helper()
	log := pc.logs[i]
	timer := time.NewTimer(processRegisterTimeout)
	defer timer.Stop()
	select {
	case <-log.seen("registered with the controller"):
	case <-pc.c.Exited(i):
		pc.t.Fatalf("node %d exited before it registered:\n%s", i+1, log.tail())
	case <-timer.C:
		pc.t.Fatalf("node %d did not register within %v:\n%s", i+1, processRegisterTimeout, log.tail())
	}
}

// start restarts node i on the same data and ports and waits until it
// registered again.
func (pc *processCluster) start(i int) {
	pc.t.Helper()
	pc.launch(i)
	pc.awaitRegistered(i)
}

// kill sends SIGKILL to node i and waits until it is gone. It does
// nothing if the node is not running.
func (pc *processCluster) kill(i int) { pc.c.Kill(i) }

// pause sends SIGSTOP to node i and waits until it has stopped: it stops
// fetching and heartbeating, but its sockets stay open, so nothing
// notices until a timeout. Once pause returns the node sends nothing more.
func (pc *processCluster) pause(i int) {
	pc.t.Helper()
	if err := pc.c.Pause(i); err != nil {
		pc.t.Fatal(err)
	}
}

// gauge reads the value of one series (name and labels, as /metrics
// prints them) from node i's /metrics. A series not there yet reads 0: a
// gauge vector shows a label set only once it was first changed.
func (pc *processCluster) gauge(ctx context.Context, i int, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pc.admin[i]+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("node %d /metrics: %w", i+1, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("node %d /metrics: %w", i+1, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("node %d /metrics: %s", i+1, resp.Status)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, nil
}

// awaitGauge polls node i's /metrics until series reads want.
func (pc *processCluster) awaitGauge(ctx context.Context, i int, series string, want float64) {
	pc.t.Helper()
	for {
		v, err := pc.gauge(ctx, i, series)
		if err == nil && v == want {
			return
		}
		select {
		case <-ctx.Done():
			pc.t.Fatalf("node %d: %s never read %v; last %v (err %v)", i+1, series, want, v, err)
		case <-time.After(externalPollInterval):
		}
	}
}

// resume sends SIGCONT to node i.
func (pc *processCluster) resume(i int) {
	pc.t.Helper()
	if err := pc.c.Resume(i); err != nil {
		pc.t.Fatal(err)
	}
}

// logWatcher receives a node's JSON log on stderr, keeps its tail for
// failure messages, and signals when a line with a given msg appears.
type logWatcher struct {
	mu    sync.Mutex
	split lineSplitter
	lines []string
	msgs  map[string]chan struct{} // closed once a line with that msg appeared
	echo  io.Writer                // if set, every line is copied here
}

// logTailLines is how many lines of a node's log a failure shows.
const logTailLines = 40

func newLogWatcher() *logWatcher { return &logWatcher{msgs: map[string]chan struct{}{}} }

// seen returns a channel closed once a line with msg has been logged.
func (w *logWatcher) seen(msg string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.chanLocked(msg)
}

func (w *logWatcher) chanLocked(msg string) chan struct{} {
	ch, ok := w.msgs[msg]
	if !ok {
		ch = make(chan struct{})
		w.msgs[msg] = ch
	}
	return ch
}

func (w *logWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.split.feed(b, w.lineLocked)
	return len(b), nil
}

func (w *logWatcher) lineLocked(s string) {
	if w.echo != nil {
		fmt.Fprintln(w.echo, s)
	}
	w.lines = append(w.lines, s)
	if len(w.lines) > logTailLines {
		w.lines = w.lines[len(w.lines)-logTailLines:]
	}
	var l struct {
		Msg string `json:"msg"`
	}
	if json.Unmarshal([]byte(s), &l) != nil || l.Msg == "" {
		return
	}
	ch := w.chanLocked(l.Msg)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (w *logWatcher) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// maxPartialLine bounds a line without a newline yet.
const maxPartialLine = 1 << 20

// lineSplitter cuts a process's output stream into lines.
type lineSplitter struct{ partial []byte }

// feed adds b and calls line for each complete line (and for an overlong
// partial one, so a missing newline cannot grow it without bound).
func (s *lineSplitter) feed(b []byte, line func(string)) {
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	if len(s.partial) > maxPartialLine {
		line(string(s.partial))
		s.partial = nil
	}
}
