package admin

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// newMux routes the admin endpoints. Patterns with GET also answer HEAD;
// other methods get 405 from the mux.
func newMux(gatherer prometheus.Gatherer, health, ready CheckFunc, log *slog.Logger) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// A collector that fails costs its own series, not the scrape:
		// during an incident partial metrics beat none.
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxParallelScrapes,
		Timeout:             scrapeTimeout,
	}))
	mux.Handle("GET /healthz", checkHandler(health, "ok"))
	mux.Handle("GET /readyz", checkHandler(ready, "ready"))
	mux.HandleFunc("GET /{$}", index)
	return mux
}

// checkHandler answers 200 with okText while check passes, else 503 with
// the reason, in plain text for curl and probe logs alike.
func checkHandler(check CheckFunc, okText string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if check != nil {
			if err := check(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, "not "+okText+": "+err.Error()+"\n")
				return
			}
		}
		_, _ = io.WriteString(w, okText+"\n")
	})
}

// index lists the endpoints, for an operator who opens the address in a
// browser.
func index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "Skein admin endpoints:\n  /metrics  Prometheus metrics\n  /healthz  the process is serving\n  /readyz   registered, unfenced and caught up\n")
}
