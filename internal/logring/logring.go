// Package logring keeps the server's most recent log lines in memory, for
// the getLog command: a slog.Handler wrapper that passes every record on
// to the real handler and also keeps it, formatted as mongod's structured
// log line, in a fixed-size ring.
package logring

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// Capacity is how many lines a ring keeps, as mongod's in-memory log.
const Capacity = 1024

// Ring holds the latest lines of the global log, and the warnings logged
// while the server was starting.
type Ring struct {
	mu       sync.Mutex
	lines    []string
	next     int
	total    int64
	startup  []string
	starting bool
}

// New returns an empty ring that files warnings as startup warnings until
// Started is called.
func New() *Ring { return &Ring{lines: make([]string, 0, Capacity), starting: true} }

// Started ends the startup period.
func (r *Ring) Started() {
	r.mu.Lock()
	r.starting = false
	r.mu.Unlock()
}

func (r *Ring) add(line string, level slog.Level) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if r.starting && level >= slog.LevelWarn && len(r.startup) < Capacity {
		r.startup = append(r.startup, line)
	}
	if len(r.lines) < Capacity {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % Capacity
}

// Global returns the kept lines, oldest first, and how many lines were
// written in all.
func (r *Ring) Global() ([]string, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	out = append(out, r.lines[:r.next]...)
	return out, r.total
}

// StartupWarnings returns the warnings logged during startup.
func (r *Ring) StartupWarnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.startup...)
}

// Handler feeds a Ring and passes records on to the next handler.
type Handler struct {
	next   slog.Handler
	ring   *Ring
	attrs  []slog.Attr // from WithAttrs, already qualified by groups
	groups []string
}

// NewHandler wraps next so that ring keeps what it logs.
func NewHandler(next slog.Handler, ring *Ring) *Handler {
	return &Handler{next: next, ring: ring}
}

// Enabled keeps what the next handler keeps: getLog shows the lines the
// server's log level lets through, as mongod's does.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	h.ring.add(h.format(rec), rec.Level)
	return h.next.Handle(ctx, rec)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := *h
	out.next = h.next.WithAttrs(attrs)
	out.attrs = append(append([]slog.Attr(nil), h.attrs...), h.qualify(attrs)...)
	return &out
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	out := *h
	out.next = h.next.WithGroup(name)
	out.groups = append(append([]string(nil), h.groups...), name)
	return &out
}

func (h *Handler) qualify(attrs []slog.Attr) []slog.Attr {
	if len(h.groups) == 0 {
		return attrs
	}
	var group slog.Attr
	for i := len(h.groups) - 1; i >= 0; i-- {
		var inner []any
		if i == len(h.groups)-1 {
			for _, a := range attrs {
				inner = append(inner, a)
			}
		} else {
			inner = []any{group}
		}
		group = slog.Group(h.groups[i], inner...)
	}
	return []slog.Attr{group}
}

// logLine is mongod's structured log line.
type logLine struct {
	T    map[string]string `json:"t"`
	S    string            `json:"s"`
	C    string            `json:"c"`
	ID   int               `json:"id"`
	Ctx  string            `json:"ctx"`
	Msg  string            `json:"msg"`
	Attr map[string]any    `json:"attr,omitempty"`
}

func (h *Handler) format(rec slog.Record) string {
	attrs := map[string]any{}
	component := "-"
	add := func(a slog.Attr) {
		if a.Key == "component" {
			component = a.Value.String()
			return
		}
		attrs[a.Key] = attrValue(a.Value)
	}
	for _, a := range h.attrs {
		add(a)
	}
	var own []slog.Attr
	rec.Attrs(func(a slog.Attr) bool { own = append(own, a); return true })
	for _, a := range h.qualify(own) {
		add(a)
	}
	line := logLine{
		T: map[string]string{"$date": rec.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
		S: severity(rec.Level), C: component, Ctx: "mayfly", Msg: rec.Message,
	}
	if len(attrs) > 0 {
		line.Attr = attrs
	}
	b, err := json.Marshal(line)
	if err != nil {
		return rec.Message
	}
	return string(b)
}

func attrValue(v slog.Value) any {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		m := map[string]any{}
		for _, a := range v.Group() {
			m[a.Key] = attrValue(a.Value)
		}
		return m
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
		if b, err := json.Marshal(v.Any()); err == nil && json.Valid(b) {
			return json.RawMessage(b)
		}
		return v.String()
	}
	return v.Any()
}

// severity is mongod's one-letter severity.
func severity(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "E"
	case l >= slog.LevelWarn:
		return "W"
	case l >= slog.LevelInfo:
		return "I"
	}
	return "D1"
}
