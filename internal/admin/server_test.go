package admin

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func startServer(t *testing.T, reg prometheus.Gatherer, health, ready CheckFunc) *Server {
	t.Helper()
	s := New("127.0.0.1:0", reg, health, ready, slog.New(slog.DiscardHandler))
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "skein_test_requests_total", Help: "test"})
	reg.MustRegister(requests)
	requests.Add(3)

	var readiness atomic.Pointer[error]
	notRegistered := errors.New("not registered with the controller")
	readiness.Store(&notRegistered)
	ready := func() error { return *readiness.Load() }
	s := startServer(t, reg, nil, ready)
	base := "http://" + s.Addr()

	tests := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string // substring
	}{
		{"healthz", "GET", "/healthz", 200, "ok\n"},
		{"healthz head", "HEAD", "/healthz", 200, ""},
		{"readyz before registration", "GET", "/readyz", 503, "not ready: not registered with the controller\n"},
		{"metrics", "GET", "/metrics", 200, "skein_test_requests_total 3\n"},
		{"metrics post", "POST", "/metrics", 405, ""},
		{"index", "GET", "/", 200, "/readyz"},
		{"unknown path", "GET", "/debug/pprof/", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, base+tt.path)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", status, tt.wantStatus, body)
			}
			if !strings.Contains(body, tt.wantBody) {
				t.Errorf("body = %q, want it to contain %q", body, tt.wantBody)
			}
		})
	}

	var none error
	readiness.Store(&none)
	if status, body := do(t, "GET", base+"/readyz"); status != 200 || body != "ready\n" {
		t.Errorf("readyz once ready = %d %q, want 200 \"ready\\n\"", status, body)
	}
}

func TestHealthCheckFailure(t *testing.T) {
	s := startServer(t, prometheus.NewRegistry(), func() error { return errors.New("log dir failed") }, nil)
	status, body := do(t, "GET", "http://"+s.Addr()+"/healthz")
	if status != 503 || body != "not ok: log dir failed\n" {
		t.Errorf("healthz = %d %q, want 503 with the reason", status, body)
	}
}

// failingCollector always fails, as a collector with a bug would.
type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("broken"))
}

// A failing collector costs its own series, not the whole scrape.
func TestMetricsSurviveAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(failingCollector{prometheus.NewDesc("skein_broken", "broken", nil, nil)})
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "skein_test_up", Help: "test"})
	up.Set(1)
	reg.MustRegister(up)
	s := startServer(t, reg, nil, nil)
	status, body := do(t, "GET", "http://"+s.Addr()+"/metrics")
	if status != 200 || !strings.Contains(body, "skein_test_up 1") {
		t.Errorf("metrics = %d %q, want 200 with skein_test_up", status, body)
	}
}

func TestLifecycle(t *testing.T) {
	s := New("127.0.0.1:0", prometheus.NewRegistry(), nil, nil, nil)
	if err := s.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	s = New("127.0.0.1:0", prometheus.NewRegistry(), nil, nil, slog.New(slog.DiscardHandler))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if strings.HasSuffix(addr, ":0") {
		t.Errorf("Addr after Start = %s, want the bound port", addr)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start: want error")
	}
	busy := New(addr, prometheus.NewRegistry(), nil, nil, slog.New(slog.DiscardHandler))
	if err := busy.Start(); err == nil {
		busy.Close()
		t.Error("Start on a busy address: want error")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("request after Close: want connection error")
	}
}

// TestPprofOptIn: the profiles are served only after EnablePprof
// (admin.pprof.enable), and then answer with real profiles.
func TestPprofOptIn(t *testing.T) {
	off := startServer(t, prometheus.NewRegistry(), nil, nil)
	if code, _ := do(t, http.MethodGet, "http://"+off.Addr()+"/debug/pprof/heap"); code != http.StatusNotFound {
		t.Fatalf("pprof off: status %d, want 404", code)
	}
	on := New("127.0.0.1:0", prometheus.NewRegistry(), nil, nil, slog.New(slog.DiscardHandler))
	on.EnablePprof()
	if err := on.Start(); err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	code, body := do(t, http.MethodGet, "http://"+on.Addr()+"/debug/pprof/goroutine?debug=1")
	if code != http.StatusOK || !strings.Contains(body, "goroutine profile: total") {
		t.Fatalf("goroutine profile: status %d, body %.200q", code, body)
	}
	if code, body := do(t, http.MethodGet, "http://"+on.Addr()+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Fatalf("pprof index: status %d, body %.200q", code, body)
	}
}
