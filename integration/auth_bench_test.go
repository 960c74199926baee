package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// benchServer starts a server for a benchmark; with access control it
// gets the user bench/bench-pw (readWrite on test, defined in admin)
// through the localhost exception.
func benchServer(b *testing.B, sec app.Security, clientTLS *tls.Config) (addr string) {
	cfg := app.Config{Addr: "127.0.0.1:0", InMemory: true, Security: sec,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := app.Start(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	addr = a.Addr().String()
	if !sec.Auth {
		return addr
	}
	c := benchClient(b, "mongodb://"+addr+"/?directConnection=true", clientTLS)
	err = c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "createUser", Value: "bench"},
		{Key: "pwd", Value: "bench-pw"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "test"}}}}}).Err()
	if err != nil {
		b.Fatal(err)
	}
	return addr
}

func benchURI(addr string, withUser bool) string {
	if withUser {
		return "mongodb://bench:bench-pw@" + addr + "/?directConnection=true&authSource=admin&authMechanism=SCRAM-SHA-256"
	}
	return "mongodb://" + addr + "/?directConnection=true"
}

// BenchmarkConnectSCRAMSHA256First: a new connection and a login whose
// client derives the salted password (what a client's first login costs).
func BenchmarkConnectSCRAMSHA256First(b *testing.B) {
	addr := benchServer(b, app.Security{Auth: true}, nil)
	cred := auth.Credential{User: "bench", DB: "admin", Password: "bench-pw"}
	for b.Loop() {
		if err := loginOnce(context.Background(), addr, cred); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConnectSCRAMSHA256Cached: the same with the client's derived
// keys cached, as drivers keep them for the pool's next connections.
func BenchmarkConnectSCRAMSHA256Cached(b *testing.B) {
	addr := benchServer(b, app.Security{Auth: true}, nil)
	client, err := scram.SHA256.NewClient("bench", "bench-pw", "")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if !rightPassword(auth.WireRoundTrip(nc), client) {
			b.Fatal("login failed")
		}
		nc.Close()
	}
}

func rightPassword(rt auth.RoundTrip, client *scram.Client) bool {
	return lookupField(scramLogin(rt, client, "admin"), "done") == true
}

// BenchmarkAuthSessionWorkload runs a session-store mix (80% reads by _id,
// 15% updates, 5% inserts with an expiry date) from 8 goroutines on one
// pooled client against three servers side by side, in 30 rounds of
// 200 ms each: plaintext without access control, --auth with an
// authenticated client, and --auth over TLS. It reports each median rate
// and the median of the per-round ratios to plaintext.
func BenchmarkAuthSessionWorkload(b *testing.B) {
	p := newPKI(b)
	tlsSec := app.Security{Auth: true, TLSMode: server.TLSRequire,
		TLS: tlsconf.Options{CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}}
	clients := []*mongo.Client{
		benchClient(b, benchURI(benchServer(b, app.Security{}, nil), false), nil),
		benchClient(b, benchURI(benchServer(b, app.Security{Auth: true}, nil), true), nil),
		benchClient(b, benchURI(benchServer(b, tlsSec, p.clientTLS(true)), true), p.clientTLS(true)),
	}
	names := []string{"plain", "auth", "auth+tls"}
	rates := make([][]float64, len(clients))
	nextIDs := make([]atomic.Int64, len(clients))
	for i, c := range clients {
		seedSessions(b, c)
		nextIDs[i].Store(sessionDocs)
	}
	for b.Loop() {
		for round := 0; round < 30; round++ {
			// The order rotates so no server always runs first in a round.
			for k := range clients {
				i := (round + k) % len(clients)
				rates[i] = append(rates[i], sessionRate(b, clients[i], &nextIDs[i], 200*time.Millisecond))
			}
		}
	}
	for i, name := range names {
		b.ReportMetric(median(rates[i]), name+"-ops/s")
		b.Logf("%s: median %.0f ops/s (rounds %v)", name, median(rates[i]), fmtRates(rates[i]))
		if i == 0 {
			continue
		}
		// Rounds are paired in time, so the median of their ratios is
		// steadier than the ratio of medians on a busy machine.
		ratios := make([]float64, len(rates[i]))
		for r := range ratios {
			ratios[r] = rates[i][r] / rates[0][r]
		}
		b.ReportMetric(median(ratios), name+"/plain")
	}
}

func benchClient(b *testing.B, uri string, cfg *tls.Config) *mongo.Client {
	o := options.Client().ApplyURI(uri).SetMaxPoolSize(16)
	if cfg != nil {
		o.SetTLSConfig(cfg)
	}
	c, err := mongo.Connect(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

const sessionDocs = 2000

func seedSessions(b *testing.B, c *mongo.Client) {
	docs := make([]any, sessionDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "user", Value: fmt.Sprint("u", i)}, {Key: "n", Value: 0},
			{Key: "expiresAt", Value: time.Now().Add(time.Hour)}}
	}
	coll := c.Database("test").Collection("sessions")
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		b.Fatal(err)
	}
}

// sessionRate runs the mix for d and returns operations per second.
func sessionRate(b *testing.B, c *mongo.Client, next *atomic.Int64, d time.Duration) float64 {
	coll := c.Database("test").Collection("sessions")
	var ops atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			ctx := context.Background()
			for time.Now().Before(deadline) {
				id := rng.IntN(sessionDocs)
				var err error
				switch p := rng.IntN(100); {
				case p < 80:
					err = coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
				case p < 95:
					_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				default:
					_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: next.Add(1)}, {Key: "expiresAt", Value: time.Now().Add(time.Hour)}})
				}
				if err != nil {
					b.Error(err)
					return
				}
				ops.Add(1)
			}
		}(uint64(w))
	}
	wg.Wait()
	return float64(ops.Load()) / d.Seconds()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func fmtRates(xs []float64) string {
	out := ""
	for _, x := range xs {
		out += fmt.Sprintf(" %.0f", x)
	}
	return out
}
