package metrics

import (
	"context"
	"crypto/tls"
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
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Server{ln: ln, done: make(chan error, 1)}, nil
}

// Close releases a listener that will not serve.
func (s *Server) Close() error { return s.ln.Close() }

// Access says who may read the endpoint, and over what.
type Access struct {
	// Authorize answers http.StatusOK for a request that may be served,
	// or the status to refuse it with (401 without valid credentials,
	// 403 for a user without the privilege). Nil serves every request:
	// access control is off.
	Authorize func(*http.Request) int
	// TLS, when set, serves HTTPS with it.
	TLS *tls.Config
}

// Paths lists what the endpoint serves, in the order the mux registers it.
func Paths() []string { return []string{"/metrics", "/api/expiry", "/"} }

// Serve serves src's figures until Shutdown, in the background.
func (s *Server) Serve(src Sources, access Access, logger *slog.Logger) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(src),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handlers := []http.Handler{
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError,
			ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}),
		expiryAPI(src.Expiry, logger),
		http.HandlerFunc(dashboard),
	}
	mux := http.NewServeMux()
	for i, path := range Paths() {
		mux.Handle(path, handlers[i])
	}
	s.http = &http.Server{Handler: guard(mux, access.Authorize), ReadHeaderTimeout: 10 * time.Second,
		// Failed handshakes and bad requests are the client's doing:
		// a scanner must not fill the log.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	scheme, ln := "http", s.ln
	if access.TLS != nil {
		scheme, ln = "https", tls.NewListener(s.ln, access.TLS)
	}
	logger.Info("metrics and dashboard listening", "addr", scheme+"://"+s.ln.Addr().String()+"/",
		"access", accessName(access))
	go func() { s.done <- s.http.Serve(ln) }()
}

// guard refuses what authorize refuses, asking for HTTP basic credentials.
func guard(next http.Handler, authorize func(*http.Request) int) http.Handler {
	if authorize == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := authorize(r)
		if status == http.StatusOK {
			next.ServeHTTP(w, r)
			return
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="mayfly", charset="UTF-8"`)
		}
		http.Error(w, http.StatusText(status), status)
	})
}

func accessName(a Access) string {
	if a.Authorize == nil {
		return "open"
	}
	return "clusterMonitor users"
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
	UpcomingAtMillis     int64         `json:"upcomingAt"`
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
		UpcomingAtMillis: v.UpcomingAt.UnixMilli(),
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
