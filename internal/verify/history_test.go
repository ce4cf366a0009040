package verify

import (
	"bytes"
	"encoding/xml"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHistoryJSONRoundTrip(t *testing.T) {
	b := clean().fail(1, 9, 0, true).
		add(Event{Type: EventFaultStart, Fault: 1, Broker: 2, Note: "kill -9 broker 2"}).
		add(Event{Type: EventPoll, Consumer: 1, Poll: 3, Err: "NOT_LEADER_OR_FOLLOWER"}).
		add(Event{Type: EventFaultEnd, Fault: 1, Broker: 2, Note: "restart broker 2"})
	b.h.Meta.Started = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	b.h.Meta.Seed = 42
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &b.h); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != len(b.h.Events)+3 {
		t.Errorf("%d lines, want one per event plus 3", lines)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &b.h) {
		t.Errorf("round trip changed the history:\n got %+v\nwant %+v", got, &b.h)
	}
}

func TestHistoryJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, &History{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(&buf); err != nil {
		t.Fatalf("empty history does not decode: %v\n%s", err, buf.String())
	}
}

func TestReadJSONRejectsGarbage(t *testing.T) {
	if _, err := ReadJSON(strings.NewReader(`{"meta":{`)); err == nil {
		t.Fatal("truncated history decoded")
	}
}

func TestTimeline(t *testing.T) {
	b := clean()
	b.add(Event{Type: EventPhase, Note: "faults"})
	b.now = 2 * time.Second
	b.add(Event{Type: EventFaultStart, Fault: 1, Broker: 2, Note: "pause broker 2 <SIGSTOP>"})
	b.fail(1, 9, 0, false)
	b.add(Event{Type: EventPoll, Consumer: 1, Poll: 2, Err: "boom"})
	b.now = 5 * time.Second
	b.add(Event{Type: EventFaultEnd, Fault: 1})
	b.add(Event{Type: EventFaultStart, Fault: 2, Note: "kill -9 broker 1"}) // never ended: drawn to the end
	b.add(Event{Type: EventAssign, Consumer: 3, Group: "g", Partitions: []int32{0, 1}, Note: "assigned"})
	b.now = 9 * time.Second
	b.sendAck(1, 10, 0, 3)
	r := Check(&b.h)
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, &b.h, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<!DOCTYPE html>", "pause broker 2 &lt;SIGSTOP&gt;", "kill -9 broker 1", "p99 acknowledgement latency", "INVALID: 1 anomalies", "p1-10: acknowledged at 0@3",
		"<title>member 3 assigned partitions [0 1]</title>", "assignment changes"} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://") && !strings.Contains(page, "xmlns=\"http://www.w3.org/2000/svg\"") {
		t.Error("timeline is not self-contained")
	}
	// The picture must be well-formed XML so browsers draw all of it.
	svg := page[strings.Index(page, "<svg") : strings.Index(page, "</svg>")+len("</svg>")]
	dec := xml.NewDecoder(strings.NewReader(svg))
	bands := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" && len(se.Attr) > 0 {
			for _, a := range se.Attr {
				if a.Name.Local == "fill-opacity" {
					bands++
				}
			}
		}
	}
	if bands != 2*panelCount {
		t.Errorf("%d fault bands, want 2 faults in each of %d panels", bands, panelCount)
	}
}

func TestTimelineBoundsBuckets(t *testing.T) {
	h := &History{Events: []Event{{At: 10 * time.Hour, Type: EventAck}}}
	tl := buildTimeline(h)
	if len(tl.buckets) > maxBuckets+1 {
		t.Errorf("%d buckets for 10 hours, want at most %d", len(tl.buckets), maxBuckets+1)
	}
}

func TestP99AndNiceCeil(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	if got := p99(ds); got != 99*time.Millisecond {
		t.Errorf("p99 of 1..100 ms = %v, want 99ms", got)
	}
	if got := p99([]time.Duration{7}); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := p99(nil); got != 0 {
		t.Errorf("p99 of none = %v", got)
	}
	for in, want := range map[float64]float64{0.5: 1, 1: 1, 3: 5, 7: 10, 11: 20, 250: 500, 1000: 1000} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
