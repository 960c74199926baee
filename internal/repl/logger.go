package repl

import (
	"fmt"
	"log/slog"
	"strings"
)

// raftLogger sends etcd raft's messages to slog: its routine chatter at
// debug, elections and leadership at info.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(format string, v ...any) { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Info(v ...any)                  { r.l.Info(fmt.Sprint(v...)) }
func (r raftLogger) Infof(format string, v ...any) {
	if strings.HasPrefix(format, "entry at index %d missing from unstable log") {
		// One line per entry a new leader's log replaced while this
		// member was writing it: thousands while a restarted member
		// catches up, and nothing an operator acts on.
		r.l.Debug(fmt.Sprintf(format, v...))
		return
	}
	r.l.Info(fmt.Sprintf(format, v...))
}
func (r raftLogger) Warning(v ...any) { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r raftLogger) Fatal(v ...any)                 { r.Panic(v...) }
func (r raftLogger) Fatalf(format string, v ...any) { r.Panicf(format, v...) }
func (r raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
