package loglevel

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestLevelsFilterByLogger(t *testing.T) {
	var buf bytes.Buffer
	lv := New(slog.LevelInfo, "quorum", "partition")
	root := slog.New(lv.Handler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: Trace}))).With("node", 1)
	quorum := root.With(Key, "quorum")
	unknown := root.With(Key, "elsewhere") // not a logger of the set: the root's
	lines := func() string {
		s := buf.String()
		buf.Reset()
		return s
	}

	quorum.Debug("q1")
	root.Debug("r1")
	if s := lines(); s != "" {
		t.Fatalf("debug lines at INFO: %q", s)
	}
	if err := lv.Set("quorum", slog.LevelDebug); err != nil {
		t.Fatal(err)
	}
	quorum.Debug("q2")
	root.Debug("r2")
	unknown.Debug("u2")
	if s := lines(); !strings.Contains(s, "msg=q2") || strings.Contains(s, "r2") || strings.Contains(s, "u2") {
		t.Fatalf("quorum at DEBUG: %q", s)
	}
	// The root's level is every logger's without one of its own.
	if err := lv.Set(Root, slog.LevelError); err != nil {
		t.Fatal(err)
	}
	if lv.Level("partition") != slog.LevelError || lv.Level("quorum") != slog.LevelDebug {
		t.Fatalf("levels: %+v", lv.Loggers())
	}
	if err := lv.Reset("quorum"); err != nil {
		t.Fatal(err)
	}
	quorum.Warn("q3")
	quorum.Error("q4")
	if s := lines(); strings.Contains(s, "q3") || !strings.Contains(s, "q4") {
		t.Fatalf("quorum reset to the root's ERROR: %q", s)
	}
	want := []Logger{{Root, slog.LevelError}, {"partition", slog.LevelError}, {"quorum", slog.LevelError}}
	if got := lv.Loggers(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("Loggers() = %+v, want %+v", got, want)
	}
	if err := lv.Reset(Root); !errors.Is(err, ErrRootReset) {
		t.Fatalf("reset root: %v", err)
	}
	if err := lv.Set("nope", slog.LevelInfo); !errors.Is(err, ErrUnknownLogger) {
		t.Fatalf("set unknown: %v", err)
	}
}

func TestKafkaLevelNames(t *testing.T) {
	for _, name := range []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"} {
		l, err := ParseLevel(name)
		if err != nil || LevelName(l) != name {
			t.Errorf("%s: %v, named back %s", name, err, LevelName(l))
		}
	}
	for _, bad := range []string{"debug", "WARNING", "ALL", ""} {
		if _, err := ParseLevel(bad); !errors.Is(err, ErrUnknownLevel) {
			t.Errorf("ParseLevel(%q): %v, want ErrUnknownLevel", bad, err)
		}
	}
	if LevelName(slog.LevelInfo+2) != "INFO" || LevelName(slog.Level(-100)) != "TRACE" {
		t.Errorf("in-between levels: %s %s", LevelName(slog.LevelInfo+2), LevelName(slog.Level(-100)))
	}
}
