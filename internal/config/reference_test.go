package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReferenceUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v (generate it with: go generate ./internal/config)", path, err)
	}
	if string(committed) != Reference() {
		t.Fatalf("%s is out of date with the registry; regenerate it with\n"+
			"\tgo run ./internal/config/gen      (from the module root)\n"+
			"or\tgo generate ./internal/config", path)
	}
}

func TestReferenceListsEveryProperty(t *testing.T) {
	ref := Reference()
	for _, p := range Properties() {
		if p.Name == "" {
			// Topic-only: a topic row without a broker default.
			if !strings.Contains(ref, "| `"+p.TopicName+"` | (none: set per topic only)") {
				t.Errorf("reference has no topic row for %s", p.TopicName)
			}
			continue
		}
		if !strings.Contains(ref, "| `"+p.Name+"` |") {
			t.Errorf("reference has no row for %s", p.Name)
		}
		if p.TopicName != "" && !strings.Contains(ref, "| `"+p.TopicName+"` | `"+p.Name+"`") {
			t.Errorf("reference has no topic row for %s", p.TopicName)
		}
	}
}
