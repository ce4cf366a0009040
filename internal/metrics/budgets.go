package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Budgets reads the broker-wide memory budgets at each scrape.
type Budgets struct {
	RequestBytes       func() int64 // queued.max.request.bytes in use
	FetchResponseBytes func() int64 // fetch.response.max.inflight.bytes in use
}

// RegisterBudgets exposes how much of each broker-wide budget is taken:
// a gauge at its limit means connections are waiting for it.
func (m *Metrics) RegisterBudgets(b Budgets) error {
	if m == nil {
		return nil
	}
	gauges := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "request_bytes_in_use",
			Help: "Bytes of request frames being read or handled, of queued.max.request.bytes.",
		}, func() float64 { return float64(b.RequestBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "fetch_response_bytes_in_flight",
			Help: "Bytes of consumer fetch answers read but not yet written to their sockets, of fetch.response.max.inflight.bytes.",
		}, func() float64 { return float64(b.FetchResponseBytes()) }),
	}
	for _, g := range gauges {
		if err := m.reg.Register(g); err != nil {
			return fmt.Errorf("registering budget metrics: %w", err)
		}
	}
	return nil
}
