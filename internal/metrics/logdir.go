package metrics

import "github.com/prometheus/client_golang/prometheus"

// RegisterLogDirSpace exports the free space of each log directory, read
// by space at each scrape: skein_log_dir_free_bytes and
// skein_log_dir_below_min_free (1 while produces to it are refused). A
// directory whose space cannot be read reports neither.
func (m *Metrics) RegisterLogDirSpace(dirs []string, space func(dir string) (free float64, below bool, ok bool)) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(logDirSpace{dirs: dirs, space: space})
}

var (
	logDirFreeDesc = prometheus.NewDesc(namespace+"_log_dir_free_bytes",
		"Bytes free on the filesystem of a log directory (for unprivileged writers).", []string{"dir"}, nil)
	logDirBelowDesc = prometheus.NewDesc(namespace+"_log_dir_below_min_free",
		"1 while a log directory is below its free-space floor (log.dir.min.free.bytes / .percent) and refuses produces, else 0.", []string{"dir"}, nil)
)

type logDirSpace struct {
	dirs  []string
	space func(string) (float64, bool, bool)
}

func (l logDirSpace) Describe(ch chan<- *prometheus.Desc) {
	ch <- logDirFreeDesc
	ch <- logDirBelowDesc
}

func (l logDirSpace) Collect(ch chan<- prometheus.Metric) {
	for _, d := range l.dirs {
		free, below, ok := l.space(d)
		if !ok {
			continue
		}
		b := 0.0
		if below {
			b = 1
		}
		ch <- prometheus.MustNewConstMetric(logDirFreeDesc, prometheus.GaugeValue, free, d)
		ch <- prometheus.MustNewConstMetric(logDirBelowDesc, prometheus.GaugeValue, b, d)
	}
}
