package deploy

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// promRules is the shape of a Prometheus rule file, field for field, so a
// misspelt key fails the strict decode.
type promRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestPrometheusRules checks every rule file in prometheus/: strict YAML of
// a rule file's shape, each rule an alert with an expression, a severity
// and a summary; promtool, where installed, checks the expressions. That
// each metric they name exists is checked against a live broker in
// test/e2e (TestDiskAlertRulesNameLiveMetrics).
func TestPrometheusRules(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("prometheus", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files in prometheus/: %v", err)
	}
	for _, f := range files {
		docs := yamlDocuments(t, f)
		if len(docs) != 1 {
			t.Fatalf("%s: %d documents, want 1", f, len(docs))
		}
		var r promRules
		if err := decodeStrict(docs[0], &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(r.Groups) == 0 {
			t.Fatalf("%s: no rule groups", f)
		}
		for _, g := range r.Groups {
			for _, rule := range g.Rules {
				if rule.Alert == "" || rule.Expr == "" || rule.Labels["severity"] == "" || rule.Annotations["summary"] == "" {
					t.Errorf("%s: group %s: rule %+v needs alert, expr, a severity label and a summary", f, g.Name, rule)
				}
			}
		}
		if promtool, err := exec.LookPath("promtool"); err == nil {
			if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
				t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
			}
		}
	}
}
