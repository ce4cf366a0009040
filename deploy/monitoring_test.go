package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/node"
)

// metricName finds the Skein metrics a PromQL expression names.
var metricName = regexp.MustCompile(`\bskein_[a-z0-9_]+\b`)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// alertExprs loads every rule file in prometheus/ (TestPrometheusRules
// checks their shape) and returns each alert's expression by name.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("prometheus", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files in prometheus/: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		var rules promRules
		if err := decodeStrict(yamlDocuments(t, f)[0], &rules); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if _, dup := out[r.Alert]; dup {
					t.Errorf("%s: alert %s defined twice", f, r.Alert)
				}
				out[r.Alert] = r.Expr
			}
		}
	}
	return out
}

// dashboardExprs loads the Grafana dashboard and returns its panels'
// expressions by panel title.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(readFile(t, filepath.Join("grafana", "skein-dashboard.json"))))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("skein-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("skein-dashboard.json: no title, uid or panels")
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("skein-dashboard.json: panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// TestAlertRulesCoverWhatOperatorsPage: one alert per condition operators
// are paged for, each on the metric that measures it.
func TestAlertRulesCoverWhatOperatorsPage(t *testing.T) {
	exprs := alertExprs(t)
	for _, metric := range []string{
		"skein_offline_partitions", "skein_under_min_isr_partitions", "skein_under_replicated_partitions",
		"skein_active_controller", "skein_offline_log_dirs", "skein_requests_total", "skein_consumer_group_lag_max_records",
	} {
		found := false
		for _, e := range exprs {
			if slices.Contains(metricName.FindAllString(e, -1), metric) {
				found = true
			}
		}
		if !found {
			t.Errorf("no alert on %s", metric)
		}
	}
}

// TestMonitoringFilesNameServedMetrics starts a broker, gives every kind of
// series a sample (a produce with acks=all, a consume, a group commit) and
// checks that every metric the alert rules and the dashboard name is in
// its /metrics: a renamed metric fails here, not as a silent panel.
func TestMonitoringFilesNameServedMetrics(t *testing.T) {
	named := map[string][]string{} // metric -> where
	for alert, e := range alertExprs(t) {
		for _, m := range metricName.FindAllString(e, -1) {
			named[m] = append(named[m], "alert "+alert)
		}
	}
	for panel, es := range dashboardExprs(t) {
		for _, e := range es {
			for _, m := range metricName.FindAllString(e, -1) {
				named[m] = append(named[m], "panel "+panel)
			}
		}
	}
	if len(named) == 0 {
		t.Fatal("the monitoring files name no skein_ metric")
	}

	served := liveMetricNames(t)
	for m, where := range named {
		if !served[m] {
			t.Errorf("%s (in %s) is not served by a broker", m, strings.Join(where, ", "))
		}
	}
}

// liveMetricNames runs a broker with an admin listener, drives traffic
// through it, and returns the metric names of one scrape.
func liveMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	cfg, err := config.NewBroker(map[string]string{
		"node.id":         "1",
		"listeners":       "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.dirs":        filepath.Join(t.TempDir(), "broker-1"),
		"admin.listeners": "http://127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := node.New(cfg, node.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const topic, grp = "monitored", "monitored-group"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("PLAINTEXT")), kgo.ConsumeTopics(topic),
		kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if fs := cl.PollRecords(ctx, 3); fs.Err() != nil {
		t.Fatalf("consume: %v", fs.Err())
	}
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	offsets.AddOffset(topic, 0, 1, -1) // two records behind
	if err := adm.CommitAllOffsets(ctx, grp, offsets); err != nil {
		t.Fatalf("commit: %v", err)
	}

	resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	lagSeen := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		served[name] = true
		if strings.HasPrefix(line, `skein_consumer_group_lag_records{group="`+grp+`",partition="0",topic="`+topic+`"} 2`) {
			lagSeen = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !lagSeen {
		t.Error("no skein_consumer_group_lag_records of 2 for the group that committed offset 1 of 3")
	}
	return served
}

// TestDashboardQueriesParse has Prometheus's own promtool check every
// dashboard query, as a recording rule, where promtool is installed
// (Debian's prometheus package); TestPrometheusRules checks the alert
// rules the same way.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus)")
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for panel, es := range dashboardExprs(t) {
		for i, e := range es {
			// Grafana's $__ variables are not PromQL; the dashboard uses none.
			if strings.Contains(e, "$") {
				t.Errorf("panel %q query %q uses a variable promtool cannot check", panel, e)
				continue
			}
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel%d:query%d", len(rules), i), Expr: e})
		}
	}
	doc := map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules (the dashboard's queries): %v\n%s", err, out)
	}
}
