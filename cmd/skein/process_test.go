package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/testcluster"
	"github.com/skein-log/skein/internal/testport"
)

// These tests run the skein binary as a person would: its exit code, what
// it prints, how it reacts to Ctrl-C, what it leaves behind.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// skeinBin builds the binary once per test process.
func skeinBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "skein-cli-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "skein")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runBin runs the binary to its end, bounded by limit, and returns its
// output, exit code and how long it took.
func runBin(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, skeinBin(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("skein %v did not end within %v; stdout:\n%s\nstderr:\n%s", args, limit, out.String(), errOut.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("skein %v: %v", args, err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode(), took
}

func TestHelpExitsZeroForEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"topic", "--help"}, {"topic", "-h"}, {"group", "--help"}, {"cluster", "--help"}, {"perf", "--help"},
		{"topic", "create", "--help"}, {"topic", "list", "-h"}, {"topic", "describe", "-h"}, {"topic", "alter", "-h"}, {"topic", "delete", "-h"},
		{"group", "list", "-h"}, {"group", "describe", "-h"}, {"group", "reset-offsets", "-h"}, {"group", "delete", "-h"},
		{"txn", "--help"}, {"txn", "list", "-h"}, {"txn", "describe", "-h"}, {"txn", "abort", "-h"}, {"txn", "find-hanging", "-h"},
		{"cluster", "describe", "-h"}, {"perf", "produce", "-h"}, {"perf", "consume", "--help"},
		{"produce", "--help"}, {"consume", "-h"}, {"verify", "-h"}, {"dev", "--help"}, {"server", "-h"}, {"version", "-h"},
	} {
		stdout, stderr, code, _ := runBin(t, 30*time.Second, args...)
		if code != 0 {
			t.Errorf("skein %s: exit %d, want 0\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			continue
		}
		if all := strings.ToLower(stdout + stderr); !strings.Contains(all, "usage") {
			t.Errorf("skein %s printed no usage:\n%s%s", strings.Join(args, " "), stdout, stderr)
		}
	}
	// An unknown subcommand is still an error.
	if _, stderr, code, _ := runBin(t, 30*time.Second, "topic", "frobnicate"); code == 0 || !strings.Contains(stderr, `unknown subcommand "frobnicate"`) {
		t.Errorf("skein topic frobnicate: exit %d, %s", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	stdout, stderr, code, _ := runBin(t, 30*time.Second, "version")
	if code != 0 || !strings.HasPrefix(stdout, "skein ") || !strings.Contains(stdout, "commit: ") || !strings.Contains(stdout, runtime.Version()) {
		t.Fatalf("skein version: exit %d\n%s%s", code, stdout, stderr)
	}
	got := versionText(&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T22:00:00Z"}}})
	want := "skein v1.2.3\ncommit: 0123abcd (with uncommitted changes), 2026-12-01T22:00:00Z\ngo: go1.99 " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if got != want {
		t.Errorf("versionText:\n%s\nwant:\n%s", got, want)
	}
	if got := versionText(nil); !strings.Contains(got, "commit: unknown") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("versionText without build info:\n%s", got)
	}
}

// devProcess is a `skein dev` run whose stdout is read line by line.
type devProcess struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *testcluster.Buffer
	done   chan struct{}
}

func startDev(t *testing.T, args ...string) *devProcess {
	t.Helper()
	return startSkein(t, false, append([]string{"dev"}, args...)...)
}

// startSkein starts the binary and reads its stdout (or, with
// readStderr, its stderr) line by line; the other stream is kept.
func startSkein(t *testing.T, readStderr bool, args ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(skeinBin(t), args...)
	d := &devProcess{cmd: cmd, lines: make(chan string, 100), stderr: &testcluster.Buffer{}, done: make(chan struct{})}
	var out io.Reader
	var err error
	if readStderr {
		out, err = cmd.StderrPipe()
		cmd.Stdout = d.stderr
	} else {
		out, err = cmd.StdoutPipe()
		cmd.Stderr = d.stderr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-d.done
	})
	return d
}

// await returns the first line matching re, failing if the process ends
// or limit passes first.
func (d *devProcess) await(t *testing.T, re *regexp.Regexp, limit time.Duration) []string {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				<-d.done
				t.Fatalf("skein dev ended (%v) before printing %q; stderr:\n%s", d.cmd.ProcessState, re, d.stderr.String())
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timer.C:
			t.Fatalf("skein dev printed no %q within %v; stderr:\n%s", re, limit, d.stderr.String())
		}
	}
}

// interrupt sends SIGINT, as Ctrl-C does, and returns how long the
// process took to exit and its exit code.
func (d *devProcess) interrupt(t *testing.T, limit time.Duration) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		<-d.done
		t.Fatalf("skein ended (%v) before Ctrl-C could interrupt it: %v; stderr:\n%s", d.cmd.ProcessState, err, d.stderr.String())
	}
	go func() {
		for range d.lines {
		}
	}()
	select {
	case <-d.done:
	case <-time.After(limit):
		t.Fatalf("skein dev still running %v after Ctrl-C; stderr:\n%s", limit, d.stderr.String())
	}
	return time.Since(start), d.cmd.ProcessState.ExitCode()
}

// processesMentioning lists the running processes whose command line
// holds s (the brokers of a dev cluster name its data directory).
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, f+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// devBase reserves a base port for a dev cluster of n nodes, free on
// hosts (default 127.0.0.1).
func devBase(t *testing.T, n int, hosts ...string) int {
	var offsets []int
	for i := range n {
		offsets = append(offsets, 100*i, 100*i+1, 100*i+2, 100*i+3)
	}
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	return testport.Block(t, offsets, testport.FreeOn(hosts...))
}

// ctrlCLimit is how soon after Ctrl-C a command must have ended.
const ctrlCLimit = 10 * time.Second

var (
	devReadyLine = regexp.MustCompile(`^skein dev: (\d) brokers on (\S+), data in (\S+)$`)
	devAdminLine = regexp.MustCompile(`^skein dev: admin \(/metrics, /readyz\) on (\S+)$`)
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkCleanedUp checks that no broker of a dev cluster whose temporary
// data directory was dataDir runs any more, and that the directory went.
func checkCleanedUp(t *testing.T, dataDir string) {
	t.Helper()
	if left := processesMentioning(t, dataDir); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the temporary data directory %s is still there (%v)", dataDir, err)
	}
}

// TestDevServesAdminRefusesASecondClusterAndStopsOnCtrlC: the cluster
// serves /metrics and /readyz on the printed addresses; a second `skein
// dev` on the same ports fails at once naming the broker and the port
// instead of measuring the first cluster; Ctrl-C ends it within seconds,
// with no broker left and its temporary directory gone.
func TestDevServesAdminRefusesASecondClusterAndStopsOnCtrlC(t *testing.T) {
	base := devBase(t, 3)
	d := startDev(t, "--port", fmt.Sprint(base))
	m := d.await(t, devReadyLine, 90*time.Second)
	if m[1] != "3" || m[2] != fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", base, base+100, base+200) {
		t.Fatalf("ready line %q", m[0])
	}
	dataDir := m[3]
	admin := strings.Split(d.await(t, devAdminLine, 5*time.Second)[1], ",")
	if len(admin) != 3 || admin[0] != fmt.Sprintf("http://127.0.0.1:%d", base+2) {
		t.Fatalf("admin addresses %v", admin)
	}
	for _, a := range admin {
		if code, body := httpGet(t, a+"/metrics"); code != http.StatusOK || !strings.Contains(body, "skein_") {
			t.Errorf("%s/metrics: %d\n%.300s", a, code, body)
		}
		if code, body := httpGet(t, a+"/readyz"); code != http.StatusOK {
			t.Errorf("%s/readyz: %d %s", a, code, body)
		}
	}

	stdout, stderr, code, took := runBin(t, 30*time.Second, "dev", "--port", fmt.Sprint(base), "--failover-runs", "20")
	if code == 0 || !strings.Contains(stderr, "broker 1 cannot start") || !strings.Contains(stderr, fmt.Sprintf("127.0.0.1:%d is in use", base)) {
		t.Errorf("a second skein dev on the same ports: exit %d after %v\nstdout:\n%s\nstderr:\n%s", code, took, stdout, stderr)
	}
	if strings.Contains(stdout, "run 1:") {
		t.Errorf("the second skein dev measured the first cluster:\n%s", stdout)
	}

	d.await(t, regexp.MustCompile(`press Ctrl-C`), 5*time.Second)
	took, code = d.interrupt(t, ctrlCLimit)
	t.Logf("Ctrl-C to exit: %v (exit %d)", took, code)
	if code != 0 {
		t.Errorf("exit %d after Ctrl-C; stderr:\n%s", code, d.stderr.String())
	}
	checkCleanedUp(t, dataDir)
}

// TestDevDemoStopsOnCtrlC: Ctrl-C while the demo runs (here: right after
// it killed the leader, with the restart still to come) ends it within
// seconds, with no broker left and its temporary directory gone.
func TestDevDemoStopsOnCtrlC(t *testing.T) {
	base := devBase(t, 3)
	d := startDev(t, "--demo", "--port", fmt.Sprint(base))
	dataDir := d.await(t, devReadyLine, 90*time.Second)[3]
	d.await(t, regexp.MustCompile(`^killing broker \d`), 60*time.Second)
	took, code := d.interrupt(t, ctrlCLimit)
	t.Logf("Ctrl-C to exit: %v (exit %d)", took, code)
	if code == 0 || !strings.Contains(d.stderr.String(), "interrupted") {
		t.Errorf("an interrupted demo: exit %d, stderr:\n%s", code, d.stderr.String())
	}
	checkCleanedUp(t, dataDir)
}

// TestDevCreatesAndKeepsDataDir: --data names a directory that does not
// exist yet; skein dev creates it and keeps it after Ctrl-C.
func TestDevCreatesAndKeepsDataDir(t *testing.T) {
	base := devBase(t, 1)
	dataDir := filepath.Join(t.TempDir(), "not", "yet")
	d := startDev(t, "--brokers", "1", "--port", fmt.Sprint(base), "--data", dataDir)
	if m := d.await(t, devReadyLine, 60*time.Second); m[3] != dataDir {
		t.Fatalf("ready line %q", m[0])
	}
	d.await(t, regexp.MustCompile(`press Ctrl-C`), 5*time.Second)
	took, code := d.interrupt(t, ctrlCLimit)
	if code != 0 {
		t.Errorf("exit %d after Ctrl-C; stderr:\n%s", code, d.stderr.String())
	}
	t.Logf("Ctrl-C to exit: %v", took)
	if _, err := os.Stat(filepath.Join(dataDir, "broker-1.log")); err != nil {
		t.Errorf("--data was not kept: %v", err)
	}
	if left := processesMentioning(t, dataDir); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
}

// TestDevFailsLoudlyWhenABrokerCannotStart: a broker whose log directory
// cannot be made stops at once; skein dev says which and why, and exits
// non-zero instead of announcing a cluster.
func TestDevFailsLoudlyWhenABrokerCannotStart(t *testing.T) {
	base := devBase(t, 1)
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "broker-1"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code, took := runBin(t, 60*time.Second, "dev", "--brokers", "1", "--port", fmt.Sprint(base), "--data", dataDir)
	if code == 0 || strings.Contains(stdout, "press Ctrl-C") || !strings.Contains(stderr, "broker 1 exited") || !strings.Contains(stderr, "broker-1") {
		t.Fatalf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", code, took, stdout, stderr)
	}
	t.Logf("failed after %v: %s", took, stderr)
	if took > 20*time.Second {
		t.Errorf("took %v to notice", took)
	}
	// A --data path that is a file is refused before any broker starts.
	file := filepath.Join(dataDir, "broker-1")
	if _, stderr, code, _ := runBin(t, 30*time.Second, "dev", "--brokers", "1", "--port", fmt.Sprint(base), "--data", file); code == 0 || !strings.Contains(stderr, "--data "+file) {
		t.Errorf("--data naming a file: exit %d, %s", code, stderr)
	}
}

// TestVerifyStopsOnCtrlC: Ctrl-C in the middle of the faults ends a
// verify run within seconds, its local brokers with it.
func TestVerifyStopsOnCtrlC(t *testing.T) {
	// The local brokers listen on 127.0.1.N behind proxies on 127.0.0.1.
	base := devBase(t, 3, "127.0.0.1", "127.0.1.1", "127.0.1.2", "127.0.1.3")
	out := t.TempDir()
	v := startSkein(t, true, "verify", "--duration", "2m", "--nemesis", "kill,pause", "--port", fmt.Sprint(base), "--out", out)
	v.await(t, regexp.MustCompile(`faults planned`), 90*time.Second)
	took, code := v.interrupt(t, ctrlCLimit)
	t.Logf("Ctrl-C to exit: %v (exit %d)", took, code)
	if code == 0 {
		t.Errorf("an interrupted verify exited 0")
	}
	if left := processesMentioning(t, out); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
}
