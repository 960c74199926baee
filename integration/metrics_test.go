package integration

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
)

// metricsServer starts a disk server with --http-addr and the TTL
// monitor off, and seeds shop.sessions (TTL 60 s on "at"): 5 documents
// expired two hours ago, 20 due over the next hour, 10 due in three hours.
func metricsServer(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	s := startServer(t, app.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", TTLDisabled: true})
	c := connect(t, s)
	db := c.Database("shop")
	createTTL(t, db, "sessions", "at", 60)
	now := time.Now()
	var docs []any
	add := func(n int, at func(i int) time.Time) {
		for i := range n {
			docs = append(docs, bson.D{{Key: "at", Value: at(i)}})
		}
	}
	add(5, func(int) time.Time { return now.Add(-2 * time.Hour) })
	add(20, func(i int) time.Time { return now.Add(time.Duration(3*i+1)*time.Minute - time.Minute) })
	add(10, func(int) time.Time { return now.Add(3 * time.Hour) })
	if _, err := db.Collection("sessions").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	return s, c
}

func scrape(t *testing.T, s *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + s.app.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %s\n%s", resp.Status, b)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v", err)
	}
	return families
}

// sample finds the metric of a family with the given label values.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.Metric {
		if hasLabels(m, labels) {
			return m
		}
	}
	t.Fatalf("no %s with labels %v", name, labels)
	return nil
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return math.NaN()
}

var sessionsIndex = []string{"namespace", "shop.sessions", "index", "at_1"}

func TestPrometheusMetrics(t *testing.T) {
	s, c := metricsServer(t)
	fams := scrape(t, s)
	ttl := func(name string) float64 { return value(sample(t, fams, "mayfly_ttl_"+name, sessionsIndex...)) }
	if ttl("overdue_documents") != 5 || ttl("live_documents") != 30 || ttl("expiring_next_hour_documents") != 20 {
		t.Fatalf("overdue %v live %v next hour %v, want 5, 30, 20", ttl("overdue_documents"), ttl("live_documents"), ttl("expiring_next_hour_documents"))
	}
	if age := ttl("oldest_overdue_age_seconds"); math.Abs(age-(2*3600-60)) > 30 {
		t.Fatalf("oldest overdue age %v s, want about %d", age, 2*3600-60)
	}
	if next := ttl("next_expiry_timestamp_seconds"); math.Abs(next-float64(time.Now().Add(time.Minute).Unix())) > 30 {
		t.Fatalf("next expiry %v, want about a minute from now", next)
	}
	ins := sample(t, fams, "mayfly_command_duration_seconds", "command", "insert")
	if ins.Histogram.GetSampleCount() < 1 || ins.Histogram.GetSampleSum() <= 0 || value(sample(t, fams, "mayfly_commands_total", "command", "insert")) != float64(ins.Histogram.GetSampleCount()) {
		t.Fatalf("insert latency histogram %v", ins)
	}
	if value(sample(t, fams, "mayfly_connections")) < 1 || value(sample(t, fams, "mayfly_network_bytes_total", "direction", "in")) <= 0 {
		t.Fatal("connections and traffic")
	}
	if value(sample(t, fams, "mayfly_storage_disk_bytes")) <= 0 {
		t.Fatal("a disk server has files on disk")
	}

	runCmd(t, c.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: true}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, s)
		if ttl("deleted_documents_total") == 5 && ttl("overdue_documents") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after enabling the monitor: deleted %v, overdue %v", ttl("deleted_documents_total"), ttl("overdue_documents"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	late := sample(t, fams, "mayfly_ttl_deletion_lateness_seconds", sessionsIndex...).Histogram
	if late.GetSampleCount() != 5 || late.GetSampleSum() < 5*(2*3600-60) {
		t.Fatalf("lateness of documents two hours overdue: %v", late)
	}
	// Delete what is due within the hour: the next expiry is then the
	// documents three hours out, beyond the hour the forecast reads.
	if _, err := c.Database("shop").Collection("sessions").DeleteMany(ctxT(t), bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: time.Now().Add(2 * time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the shared read's second
	fams = scrape(t, s)
	if next := ttl("next_expiry_timestamp_seconds"); math.Abs(next-float64(time.Now().Add(3*time.Hour+time.Minute).Unix())) > 30 {
		t.Fatalf("next expiry %v, want about three hours from now", next)
	}
	if ttl("live_documents") != 10 || ttl("oldest_overdue_age_seconds") != 0 {
		t.Fatalf("after deletion: live %v, oldest overdue %v", ttl("live_documents"), ttl("oldest_overdue_age_seconds"))
	}
}

// A touched document keeps its old TTL entries until they fall due; the
// forecast counts it once, where its entries are several.
func TestExpiryForecastCountsTouchedDocuments(t *testing.T) {
	s, c := metricsServer(t)
	carts := c.Database("shop").Collection("carts")
	createTTL(t, c.Database("shop"), "carts", "at", 1800)
	const docs, touches = 10, 6
	for i := range docs {
		if _, err := carts.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Now().Add(-20 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range touches {
		time.Sleep(5 * time.Millisecond) // each touch a later date
		at := time.Now()
		if k == 0 {
			at = at.Add(-10 * time.Minute) // the earliest stale entries
		}
		for i := range docs {
			if _, err := carts.UpdateOne(ctxT(t), bson.D{{Key: "_id", Value: i}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: at}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// As many again due in three hours, beyond the forecast.
	for i := range docs {
		if _, err := carts.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: docs + i}, {Key: "at", Value: time.Now().Add(3 * time.Hour)}}); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, s)
	labels := []string{"namespace", "shop.carts", "index", "at_1"}
	next := value(sample(t, fams, "mayfly_ttl_expiring_next_hour_documents", labels...))
	live := value(sample(t, fams, "mayfly_ttl_live_documents", labels...))
	if next != docs || live != 2*docs {
		t.Fatalf("forecast %v, live %v; want the %d touched documents once each of %d", next, live, docs, 2*docs)
	}
	// The next expiry is a document's, not a stale entry's 10 minutes
	// before it.
	at := value(sample(t, fams, "mayfly_ttl_next_expiry_timestamp_seconds", labels...))
	if want := float64(time.Now().Add(30 * time.Minute).Unix()); math.Abs(at-want) > 30 {
		t.Fatalf("next expiry %v, want about %v", at, want)
	}
	resp, err := http.Get("http://" + s.app.HTTPAddr() + "/api/expiry")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Indexes []struct {
			NS       string  `json:"ns"`
			Upcoming []int64 `json:"upcomingPerMinute"`
		} `json:"indexes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	for _, ix := range reply.Indexes {
		var n int64
		for _, k := range ix.Upcoming {
			n += k
		}
		if ix.NS == "shop.carts" && n != docs {
			t.Fatalf("the dashboard's forecast counts %d, want %d", n, docs)
		}
	}
}

// chromium runs Debian's headless Chromium (installed by .ci/run).
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=6000"}
	out, err := exec.CommandContext(ctx, "chromium", append(base, args...)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return string(out)
}

// dashboardFields reads one card's numbers from the page's DOM.
func dashboardFields(t *testing.T, dom, key string) map[string]float64 {
	t.Helper()
	start := regexp.MustCompile(`<section class="card" data-key="` + regexp.QuoteMeta(key) + `"`).FindStringIndex(dom)
	if start == nil {
		t.Fatalf("no card for %s in the page:\n%s", key, dom)
	}
	card := dom[start[0]:]
	if end := regexp.MustCompile(`</section>`).FindStringIndex(card); end != nil {
		card = card[:end[1]]
	}
	out := map[string]float64{}
	for _, m := range regexp.MustCompile(`data-field="(\w+)" data-value="([^"]*)"`).FindAllStringSubmatch(card, -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			out[m[1]] = v
		}
	}
	return out
}

func TestDashboardInHeadlessChromium(t *testing.T) {
	s, c := metricsServer(t)
	url := "http://" + s.app.HTTPAddr() + "/"
	check := func(phase string) {
		dom := chromium(t, "--dump-dom", url)
		// The page fetches its data again every 2 s: in the 6 s the
		// browser is given it has redrawn itself more than once.
		m := regexp.MustCompile(`<body data-refreshes="(\d+)"`).FindStringSubmatch(dom)
		if m == nil || m[1] == "0" || m[1] == "1" {
			t.Fatalf("%s: the page did not refresh itself: %v", phase, m)
		}
		fields := dashboardFields(t, dom, "shop.sessions/at_1")
		fams := scrape(t, s)
		for field, metric := range map[string]string{"overdue": "overdue_documents", "live": "live_documents", "deleted": "deleted_documents_total"} {
			want := value(sample(t, fams, "mayfly_ttl_"+metric, sessionsIndex...))
			if got, ok := fields[field]; !ok || got != want {
				t.Fatalf("%s: the page shows %s = %v, /metrics %v (fields %v)", phase, field, got, want, fields)
			}
		}
	}
	check("monitor off")

	runCmd(t, c.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: true}})
	deadline := time.Now().Add(10 * time.Second)
	for value(sample(t, scrape(t, s), "mayfly_ttl_deleted_documents_total", sessionsIndex...)) < 5 {
		if time.Now().After(deadline) {
			t.Fatal("the monitor did not delete the overdue documents")
		}
		time.Sleep(100 * time.Millisecond)
	}
	check("after deletion")

	dir := filepath.Join("..", "ci-artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot, err := filepath.Abs(filepath.Join(dir, "dashboard.png"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(shot)
	chromium(t, "--window-size=1280,900", "--screenshot="+shot, url)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v %v", shot, st, err)
	}
	t.Logf("dashboard screenshot kept at %s", shot)
}
