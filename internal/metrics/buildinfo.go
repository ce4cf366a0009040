package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is skein_build_info: always 1, labelled with what was built,
// so a dashboard shows which version each broker runs and a rolling
// upgrade can be followed.
func buildInfo() prometheus.Collector {
	version, revision := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; the labels say which Skein build this broker runs.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}
