package verify

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"
)

// maxBuckets bounds the number of time buckets a timeline draws: a long
// run is drawn with wider buckets rather than an enormous picture.
const maxBuckets = 1200

// maxRebalanceMarks bounds the assignment changes a timeline draws.
const maxRebalanceMarks = 2000

// Timeline layout, in SVG user units.
const (
	plotLeft   = 70
	plotWidth  = 1000
	panelH     = 150
	panelGap   = 40
	plotTop    = 30
	svgWidth   = plotLeft + plotWidth + 30
	panelCount = 3
	labelRows  = 4 // rows that fault and phase labels rotate through
)

// bucket is what happened in one interval of the run.
type bucket struct {
	acks, reads, fails, pollErrors int
	latencies                      []time.Duration
}

// span is a fault or a phase drawn over the panels.
type span struct {
	from, to time.Duration
	label    string
}

// timeline is the history reduced to what the picture shows.
type timeline struct {
	width   time.Duration // of one bucket
	buckets []bucket
	faults  []span
	phases  []span // to is unused: a phase is drawn as a line where it began
	// rebalances are group members' assignment changes, drawn as ticks
	// along the top of each panel (to is unused).
	rebalances []span
	end        time.Duration
}

func buildTimeline(h *History) *timeline {
	var end time.Duration
	for i := range h.Events {
		end = max(end, h.Events[i].At)
	}
	end = max(end, time.Second)
	width := time.Second
	if n := end / time.Second; n > maxBuckets {
		width = time.Duration((int64(n)+maxBuckets-1)/maxBuckets) * time.Second
	}
	t := &timeline{width: width, end: end, buckets: make([]bucket, int(end/width)+1)}
	open := map[int]int{} // fault id -> index in t.faults
	for i := range h.Events {
		e := &h.Events[i]
		b := &t.buckets[int(max(e.At, 0)/width)]
		switch e.Type {
		case EventAck:
			b.acks++
			b.latencies = append(b.latencies, e.Latency)
		case EventFail:
			b.fails++
		case EventRead:
			b.reads++
		case EventPoll:
			if e.Err != "" {
				b.pollErrors++
			}
		case EventFaultStart:
			open[e.Fault] = len(t.faults)
			t.faults = append(t.faults, span{from: e.At, to: end, label: e.Note})
		case EventFaultEnd:
			if j, ok := open[e.Fault]; ok {
				t.faults[j].to = e.At
				delete(open, e.Fault)
			}
		case EventPhase:
			t.phases = append(t.phases, span{from: e.At, label: e.Note})
		case EventAssign, EventRevoke:
			if len(t.rebalances) < maxRebalanceMarks {
				t.rebalances = append(t.rebalances, span{from: e.At, label: fmt.Sprintf("member %d %s partitions %v", e.Consumer, e.Note, e.Partitions)})
			}
		}
	}
	return t
}

// p99 is the 99th percentile of ds (0 for none); it sorts ds.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	// Nearest rank: the smallest value at or above 99% of them.
	return ds[(len(ds)*99+99)/100-1]
}

// WriteTimeline writes a self-contained HTML page (inline SVG, no scripts,
// no external resources) showing per time bucket the acknowledged and read
// records, the errors, and the 99th percentile acknowledgement latency,
// with each fault drawn as a band where it happened.
func WriteTimeline(w io.Writer, h *History, r *Result) error {
	t := buildTimeline(h)
	perSecond := float64(time.Second) / float64(t.width)
	series := func(f func(b *bucket) float64) []float64 {
		out := make([]float64, len(t.buckets))
		for i := range t.buckets {
			out[i] = f(&t.buckets[i])
		}
		return out
	}
	acks := series(func(b *bucket) float64 { return float64(b.acks) * perSecond })
	reads := series(func(b *bucket) float64 { return float64(b.reads) * perSecond })
	fails := series(func(b *bucket) float64 { return float64(b.fails) * perSecond })
	pollErrs := series(func(b *bucket) float64 { return float64(b.pollErrors) * perSecond })
	lat := series(func(b *bucket) float64 { return float64(p99(b.latencies)) / float64(time.Millisecond) })

	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>skein verify: ")
	b.WriteString(html.EscapeString(h.Meta.Topic))
	b.WriteString("</title>\n<style>body{font-family:sans-serif;margin:20px}pre{background:#f4f4f4;padding:8px}" +
		"svg text{font-size:11px;font-family:sans-serif}</style></head><body>\n")
	b.WriteString("<h2>skein verify</h2>\n<pre>")
	b.WriteString(html.EscapeString(r.Verdict(h.Meta)))
	b.WriteString("</pre>\n")
	height := plotTop + panelCount*(panelH+panelGap) + 20
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", svgWidth, height, svgWidth, height)
	panels := []struct {
		title string
		lines []namedSeries
	}{
		{"records per second", []namedSeries{{"acknowledged", "#1f77b4", acks}, {"read", "#2ca02c", reads}}},
		{"errors per second", []namedSeries{{"failed sends", "#d62728", fails}, {"poll errors", "#ff7f0e", pollErrs}}},
		{"p99 acknowledgement latency (ms)", []namedSeries{{"p99 latency", "#9467bd", lat}}},
	}
	for i, p := range panels {
		top := plotTop + i*(panelH+panelGap)
		t.drawPanel(&b, top, p.title, p.lines, i == 0)
	}
	b.WriteString("</svg>\n")
	if len(t.rebalances) > 0 {
		b.WriteString("<p>Cyan ticks along the top of each panel: group members' assignment changes (hover for which).</p>\n")
	}
	if len(t.faults) > 0 {
		b.WriteString("<h3>faults</h3>\n<pre>")
		for _, f := range t.faults {
			fmt.Fprintf(&b, "%8.1fs – %8.1fs  %s\n", f.from.Seconds(), f.to.Seconds(), html.EscapeString(f.label))
		}
		b.WriteString("</pre>\n")
	}
	b.WriteString("</body></html>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	return nil
}

type namedSeries struct {
	name, color string
	values      []float64
}

// x maps a time of the run to a horizontal coordinate.
func (t *timeline) x(at time.Duration) float64 {
	return plotLeft + float64(at)/float64(t.end)*plotWidth
}

func (t *timeline) drawPanel(b *strings.Builder, top int, title string, lines []namedSeries, labelFaults bool) {
	top64 := float64(top)
	bottom := top64 + panelH
	for i, f := range t.faults {
		x0, x1 := t.x(f.from), t.x(f.to)
		fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.25\"><title>%s</title></rect>\n",
			x0, top, max(x1-x0, 1), panelH, faultColor(f.label), html.EscapeString(f.label))
		if labelFaults {
			// Neighbouring faults' labels go on different rows so they do
			// not print over each other.
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" fill=\"#555\">%s</text>\n", x0+2, top+11+12*(i%labelRows), html.EscapeString(f.label))
		}
	}
	for i, p := range t.phases {
		x := t.x(p.from)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n", x, top, x, bottom)
		if labelFaults {
			// Phases at the end of a run follow each other closely: their
			// labels go below one another, from the bottom of the panel.
			anchor, dx := "start", 2.0
			if x > plotLeft+plotWidth/2 {
				anchor, dx = "end", -2 // keep late labels inside the plot
			}
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#888\" text-anchor=\"%s\">%s</text>\n", x+dx, bottom-4-12*float64(i%labelRows), anchor, html.EscapeString(p.label))
		}
	}
	for _, r := range t.rebalances {
		x := t.x(r.from)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#17becf\" stroke-width=\"2\"><title>%s</title></line>\n",
			x, top, x, top+12, html.EscapeString(r.label))
	}
	peak := 1.0
	for _, l := range lines {
		peak = max(peak, slices.Max(l.values))
	}
	peak = niceCeil(peak)
	fmt.Fprintf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", plotLeft, top, plotWidth, panelH)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", plotLeft-4, top+10, formatNumber(peak))
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", plotLeft-4, bottom)
	legend := title
	for _, l := range lines {
		legend += fmt.Sprintf(" <tspan fill=\"%s\">■ %s</tspan>", l.color, html.EscapeString(l.name))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\">%s</text>\n", plotLeft, bottom+14, legend)
	for _, l := range lines {
		var pts strings.Builder
		for i, v := range l.values {
			// Each bucket's value is drawn at the bucket's middle.
			at := time.Duration(i)*t.width + t.width/2
			fmt.Fprintf(&pts, "%.1f,%.1f ", t.x(min(at, t.end)), bottom-v/peak*panelH)
		}
		fmt.Fprintf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", l.color, strings.TrimSpace(pts.String()))
	}
	// Time ticks: about ten along the axis, on whole seconds.
	step := max(time.Second, (t.end / 10).Round(time.Second))
	for at := time.Duration(0); at <= t.end; at += step {
		x := t.x(at)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n", x, bottom, x, bottom+3)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#666\">%ds</text>\n", x, bottom+26, int(at/time.Second))
	}
}

// faultColor picks a band colour by the fault's first word, so each kind
// of fault looks the same wherever it appears.
func faultColor(label string) string {
	word, _, _ := strings.Cut(label, " ")
	switch word {
	case "kill":
		return "#d62728"
	case "pause":
		return "#ffbf00"
	case "terminate", "restart":
		return "#9467bd"
	}
	return "#7f7f7f"
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, for an axis
// maximum a person can read.
func niceCeil(v float64) float64 {
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func formatNumber(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}
