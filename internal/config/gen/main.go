// Command gen writes docs/configuration.md from the config registry.
//
// Run from anywhere inside the module:
//
//	go run ./internal/config/gen     (from the module root)
//	go generate ./internal/config
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skein-log/skein/internal/config"
)

func main() {
	out := flag.String("out", "", "file to write (default: docs/configuration.md at the module root)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, "docs", "configuration.md")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("creating docs directory: %w", err)
	}
	if err := os.WriteFile(out, []byte(config.Reference()), 0o644); err != nil {
		return fmt.Errorf("writing reference: %w", err)
	}
	return nil
}

// moduleRoot walks up from the working directory to the go.mod, so the
// generator works both from the root and from go generate's package dir.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
