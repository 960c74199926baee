package metrics

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mayflydb/mayfly/internal/expirywatch"
)

//go:embed dashboard.html
var dashboardPage []byte

// Server is the HTTP listener.
type Server struct {
	http *http.Server
	ln   net.Listener
	done chan error
}

// Listen binds addr, before the server opens its storage, so that a
// taken port fails the start at once.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	return &Server{ln: ln, done: make(chan error, 1)}, nil
}

// Close releases a listener that will not serve.
func (s *Server) Close() error { return s.ln.Close() }

// Serve serves src's figures until Shutdown, in the background.
func (s *Server) Serve(src Sources, logger *slog.Logger) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}))
	mux.HandleFunc("/api/expiry", expiryAPI(src.Expiry, logger))
	mux.HandleFunc("/", dashboard)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("metrics and dashboard listening", "addr", "http://"+s.ln.Addr().String()+"/")
	go func() { s.done <- s.http.Serve(s.ln) }()
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops the listener and waits for requests in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

func dashboard(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(dashboardPage)
}

// expiryIndex is one TTL index in /api/expiry, the dashboard's data.
type expiryIndex struct {
	NS                   string        `json:"ns"`
	Index                string        `json:"index"`
	Live                 int64         `json:"live"`
	Overdue              int64         `json:"overdue"`
	OldestOverdueAgeSecs float64       `json:"oldestOverdueAgeSeconds"`
	NextExpiryMillis     *int64        `json:"nextExpiryMillis"`
	Deleted              int64         `json:"deleted"`
	LatenessP99Secs      float64       `json:"latenessP99Seconds"`
	UpcomingPerMinute    []int64       `json:"upcomingPerMinute"`
	Recent               []expiryPoint `json:"recent"`
}

type expiryPoint struct {
	StartMillis int64   `json:"t"`
	PerSecond   float64 `json:"perSecond"`
	MaxLateSecs float64 `json:"maxLatenessSeconds"`
}

type expiryReply struct {
	AtMillis   int64         `json:"at"`
	StepSecs   float64       `json:"stepSeconds"`
	Indexes    []expiryIndex `json:"indexes"`
	ReadFailed string        `json:"error,omitempty"`
}

func expiryAPI(watch *expirywatch.Watch, logger *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply := expiryReply{AtMillis: time.Now().UnixMilli(), StepSecs: expirywatch.SeriesStep.Seconds(), Indexes: []expiryIndex{}}
		views, err := watch.Views()
		if err != nil {
			logger.Warn("dashboard: reading the TTL indexes", "err", err)
			reply.ReadFailed = err.Error()
		}
		for _, v := range views {
			reply.AtMillis = v.At.UnixMilli()
			reply.Indexes = append(reply.Indexes, indexJSON(v))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(reply)
	}
}

func indexJSON(v expirywatch.View) expiryIndex {
	out := expiryIndex{
		NS: v.NS, Index: v.Index, Live: v.Live, Overdue: v.Overdue, Deleted: v.Deleted,
		LatenessP99Secs: v.Lateness.Quantile(0.99), UpcomingPerMinute: v.Upcoming,
	}
	if !v.OldestOverdue.IsZero() {
		out.OldestOverdueAgeSecs = v.At.Sub(v.OldestOverdue).Seconds()
	}
	if !v.Next.IsZero() {
		ms := v.Next.UnixMilli()
		out.NextExpiryMillis = &ms
	}
	for _, p := range v.Series {
		out.Recent = append(out.Recent, expiryPoint{
			StartMillis: p.Start.UnixMilli(),
			PerSecond:   float64(p.Deleted) / expirywatch.SeriesStep.Seconds(),
			MaxLateSecs: p.MaxLateSec,
		})
	}
	return out
}
