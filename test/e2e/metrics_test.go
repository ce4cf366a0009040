package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAdminEndpointsServeMetricsAndReadiness: with admin.listeners set,
// /readyz says ready, and /metrics counts the bytes a producer and a
// consumer moved, per topic, with request latencies per API.
func TestAdminEndpointsServeMetricsAndReadiness(t *testing.T) {
	tb := startBroker(t, withProp("admin.listeners", "http://127.0.0.1:0"))
	tb.createTopic("metered", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := tb.client(kgo.DefaultProduceTopic("metered"))
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("metered value")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := tb.client(kgo.ConsumeTopics("metered"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < 20; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got += fs.NumRecords()
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + tb.b.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`skein_topic_bytes_in_total{topic="metered"}`,
		`skein_topic_bytes_out_total{topic="metered"}`,
		`skein_request_duration_seconds_count{api="Produce"}`,
		`skein_active_controller 1`,
		`skein_under_replicated_partitions 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
