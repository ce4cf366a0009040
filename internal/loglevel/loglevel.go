// Package loglevel gives a node's loggers levels that change at runtime:
// Kafka's broker loggers (the BROKER_LOGGER config resource), which
// kafka-configs --entity-type broker-loggers describes and alters.
//
// A node has a fixed set of named loggers, the components that log on
// their own (a logger made With(Key, name)), and the root logger, which
// is every other line. A named logger's level is its own when one was
// set, else the root's; setting it applies at once to every line the
// component logs, and nothing is persisted, as in Kafka.
package loglevel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
)

// Root is the root logger's name, as Kafka's.
const Root = "root"

// Key is the attribute naming a component's logger.
const Key = "component"

// Kafka's log levels (LogLevelConfig.VALID_LOG_LEVELS) as slog levels.
// TRACE is below slog's DEBUG and FATAL above its ERROR, as in log4j.
const (
	Trace = slog.LevelDebug - 4
	Fatal = slog.LevelError + 4
)

var kafkaLevels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", Trace},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", Fatal},
}

// ErrUnknownLevel is a level name that is not one of Kafka's.
var ErrUnknownLevel = errors.New("not a supported log level")

// ErrUnknownLogger is a logger name the node does not have.
var ErrUnknownLogger = errors.New("logger does not exist")

// ErrRootReset is a reset of the root logger, which has no level to fall
// back to.
var ErrRootReset = errors.New("the root logger's level cannot be removed")

// ParseLevel reads one of Kafka's level names (TRACE, DEBUG, INFO, WARN,
// ERROR, FATAL; case matters, as in Kafka).
func ParseLevel(name string) (slog.Level, error) {
	for _, l := range kafkaLevels {
		if l.name == name {
			return l.level, nil
		}
	}
	names := make([]string, len(kafkaLevels))
	for i, l := range kafkaLevels {
		names[i] = l.name
	}
	return 0, fmt.Errorf("%w: %q (valid log levels are %s)", ErrUnknownLevel, name, strings.Join(names, ", "))
}

// LevelName is the Kafka name of the most verbose level l enables: the
// highest of Kafka's levels at or below l (TRACE below that).
func LevelName(l slog.Level) string {
	name := kafkaLevels[0].name
	for _, k := range kafkaLevels {
		if k.level <= l {
			name = k.name
		}
	}
	return name
}

// unset marks a named logger without a level of its own.
const unset = math.MinInt64

// Levels are a node's loggers and their levels. It is safe for
// concurrent use; the levels are atomics read on every log call.
type Levels struct {
	root  atomic.Int64
	named map[string]*atomic.Int64 // fixed at New
}

// New has the root logger at root and the named loggers, following it.
func New(root slog.Level, names ...string) *Levels {
	l := &Levels{named: make(map[string]*atomic.Int64, len(names))}
	l.root.Store(int64(root))
	for _, n := range names {
		if n == Root {
			continue
		}
		v := new(atomic.Int64)
		v.Store(unset)
		l.named[n] = v
	}
	return l
}

// Has says whether the node has a logger of that name.
func (l *Levels) Has(name string) bool {
	_, ok := l.named[name]
	return ok || name == Root
}

// Level is a logger's level: its own, else the root's.
func (l *Levels) Level(name string) slog.Level {
	if v, ok := l.named[name]; ok {
		if own := v.Load(); own != unset {
			return slog.Level(own)
		}
	}
	return slog.Level(l.root.Load())
}

// Set gives a logger a level of its own (the root's is every other
// logger's without one).
func (l *Levels) Set(name string, level slog.Level) error {
	if name == Root {
		l.root.Store(int64(level))
		return nil
	}
	v, ok := l.named[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownLogger, name)
	}
	v.Store(int64(level))
	return nil
}

// Reset removes a named logger's own level: it follows the root again.
func (l *Levels) Reset(name string) error {
	if name == Root {
		return ErrRootReset
	}
	v, ok := l.named[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownLogger, name)
	}
	v.Store(unset)
	return nil
}

// Logger is one logger and its level.
type Logger struct {
	Name  string
	Level slog.Level
}

// Loggers lists the root logger, then the named ones by name, each with
// its level.
func (l *Levels) Loggers() []Logger {
	out := []Logger{{Root, l.Level(Root)}}
	names := make([]string, 0, len(l.named))
	for n := range l.named {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, Logger{n, l.Level(n)})
	}
	return out
}

// Handler wraps inner so that each record is kept or dropped by the level
// of the logger it comes from: the root's, or that of the component a
// With(Key, name) attribute names. inner's own level is not consulted;
// these levels are the only filter.
func (l *Levels) Handler(inner slog.Handler) slog.Handler {
	return &handler{inner: inner, levels: l, name: Root}
}

type handler struct {
	inner  slog.Handler
	levels *Levels
	name   string
}

func (h *handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.levels.Level(h.name)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	name := h.name
	for _, a := range attrs {
		if a.Key == Key && a.Value.Kind() == slog.KindString && h.levels.Has(a.Value.String()) {
			name = a.Value.String()
		}
	}
	return &handler{inner: h.inner.WithAttrs(attrs), levels: h.levels, name: name}
}

func (h *handler) WithGroup(group string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(group), levels: h.levels, name: h.name}
}
