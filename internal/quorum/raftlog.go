package quorum

import (
	"fmt"
	"log/slog"
)

// raftLogger adapts slog to raft's Logger. Raft calls Panic and Fatal only on
// broken invariants; both log and then panic, because carrying on could vote
// or apply from inconsistent state (and raft assumes they never return).
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(format string, v ...any) { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Info(v ...any)                  { r.l.Info(fmt.Sprint(v...)) }
func (r raftLogger) Infof(format string, v ...any)  { r.l.Info(fmt.Sprintf(format, v...)) }
func (r raftLogger) Warning(v ...any)               { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r raftLogger) Fatal(v ...any)                 { r.die(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...any) { r.die(fmt.Sprintf(format, v...)) }
func (r raftLogger) Panic(v ...any)                 { r.die(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { r.die(fmt.Sprintf(format, v...)) }

func (r raftLogger) die(msg string) {
	r.l.Error("raft invariant broken", "msg", msg)
	panic("raft: " + msg)
}
