package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// The administrator every access-controlled test server gets first,
// through the localhost exception.
const (
	rootUser = "root"
	rootPwd  = "r00t-Secret-pw"
)

// logBuffer collects a server's log for tests that read it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startAuthServer starts a server with access control on, creates the
// root user over the localhost exception, and makes s.uri log in as root
// (so the harness's checks at the end can still read everything).
func startAuthServer(t *testing.T, cfg app.Config) (*testServer, *logBuffer) {
	t.Helper()
	return startAuthServerTLS(t, cfg, nil)
}

// startAuthServerTLS is startAuthServer whose first client speaks TLS
// with clientTLS (when not nil).
func startAuthServerTLS(t *testing.T, cfg app.Config, clientTLS *tls.Config) (*testServer, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	// A keyFile turns access control on by itself.
	cfg.Security.Auth = cfg.Security.KeyFile == ""
	s := startServer(t, cfg)
	anon, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetTLSConfig(clientTLS).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = anon.Disconnect(context.Background()) })
	runCmd(t, anon.Database("admin"), bson.D{
		{Key: "createUser", Value: rootUser}, {Key: "pwd", Value: rootPwd},
		{Key: "roles", Value: bson.A{"root"}},
	})
	s.uri = userURI(s, rootUser, rootPwd, "admin", "")
	return s, logs
}

// userURI is the server's URI with credentials (and a mechanism, when
// given).
func userURI(s *testServer, user, pwd, authSource, mech string) string {
	host := strings.TrimPrefix(strings.SplitN(s.uri, "/?", 2)[0], "mongodb://")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	u := fmt.Sprintf("mongodb://%s:%s@%s/?directConnection=true&authSource=%s",
		url.QueryEscape(user), url.QueryEscape(pwd), host, authSource)
	if mech != "" {
		u += "&authMechanism=" + mech
	}
	return u
}

// connectAs logs in as user and checks the login with a ping.
func connectAs(t *testing.T, s *testServer, user, pwd, authSource, mech string) (*mongo.Client, error) {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(userURI(s, user, pwd, authSource, mech)).
		SetTimeout(20 * time.Second).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c, c.Ping(ctxT(t), nil)
}

func mustConnectAs(t *testing.T, s *testServer, user, pwd, authSource, mech string) *mongo.Client {
	t.Helper()
	c, err := connectAs(t, s, user, pwd, authSource, mech)
	if err != nil {
		t.Fatalf("login as %s@%s (%s): %v", user, authSource, mech, err)
	}
	return c
}

// createUser makes a user in db with the given roles, as root.
func createUser(t *testing.T, root *mongo.Client, db, user, pwd string, roles bson.A) {
	t.Helper()
	runCmd(t, root.Database(db), bson.D{
		{Key: "createUser", Value: user}, {Key: "pwd", Value: pwd}, {Key: "roles", Value: roles},
	})
}
