package integration

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// tlsServer starts an access-controlled server in mode, verifying client
// certificates against the test CA; s.uri carries root's login over TLS.
func tlsServer(t *testing.T, mode server.TLSMode) (*testServer, *testPKI, *logBuffer) {
	t.Helper()
	p := newPKI(t)
	cfg := app.Config{Security: app.Security{TLSMode: mode, TLS: tlsconf.Options{
		CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}}}
	s, logs := startAuthServerTLS(t, cfg, p.clientTLS(true))
	s.uri += "&tls=true&tlsCAFile=" + p.CAFile + "&tlsCertificateKeyFile=" + p.ClientFile
	return s, p, logs
}

func tlsClient(t *testing.T, s *testServer, user, pwd string, cfg *tls.Config) (*mongo.Client, error) {
	t.Helper()
	uri := userURI(s, user, pwd, "admin", "SCRAM-SHA-256")
	o := options.Client().ApplyURI(uri).SetServerSelectionTimeout(1500 * time.Millisecond).SetTimeout(10 * time.Second)
	if cfg != nil {
		o.SetTLSConfig(cfg)
	}
	c, err := mongo.Connect(o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c, c.Ping(ctxT(t), nil)
}

func waitForLog(t *testing.T, logs *logBuffer, part string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), part) {
		if time.Now().After(deadline) {
			t.Fatalf("log has no %q:\n%s", part, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTLSRequired(t *testing.T) {
	s, p, logs := tlsServer(t, server.TLSRequire)
	c, err := tlsClient(t, s, rootUser, rootPwd, p.clientTLS(true))
	if err != nil {
		t.Fatalf("TLS client with certificate: %v", err)
	}
	if _, err := c.Database("test").Collection("c").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := p.clientTLS(true)
		cfg.MinVersion, cfg.MaxVersion = v, v
		if _, err := tlsClient(t, s, rootUser, rootPwd, cfg); err != nil {
			t.Fatalf("TLS version %x: %v", v, err)
		}
	}
	old := p.clientTLS(true)
	old.MinVersion, old.MaxVersion = tls.VersionTLS11, tls.VersionTLS11
	if _, err := tlsClient(t, s, rootUser, rootPwd, old); err == nil {
		t.Fatal("TLS 1.1 accepted")
	}
	if _, err := tlsClient(t, s, rootUser, rootPwd, p.clientTLS(false)); err == nil {
		t.Fatal("client without a certificate accepted")
	}
	waitForLog(t, logs, "TLS handshake failed")
	waitForLog(t, logs, "didn't provide a certificate")
	if _, err := tlsClient(t, s, rootUser, rootPwd, nil); err == nil {
		t.Fatal("plaintext client accepted by requireTLS")
	}
	waitForLog(t, logs, "plaintext connection refused: this server requires TLS")
}

func TestTLSClientOnPlaintextServer(t *testing.T) {
	p := newPKI(t)
	s, logs := startAuthServer(t, app.Config{})
	if _, err := tlsClient(t, s, rootUser, rootPwd, p.clientTLS(true)); err == nil {
		t.Fatal("TLS client connected to a plaintext server")
	}
	waitForLog(t, logs, "TLS handshake received but this server has TLS disabled")
	if strings.Contains(logs.String(), "malformed message") {
		t.Fatalf("the TLS hello was read as a message:\n%s", logs.String())
	}
	// The server is still fine for plaintext clients.
	if _, err := tlsClient(t, s, rootUser, rootPwd, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTLSAllowAcceptsBoth(t *testing.T) {
	for _, mode := range []server.TLSMode{server.TLSAllow, server.TLSPrefer} {
		t.Run(mode.String(), func(t *testing.T) {
			s, p, _ := tlsServer(t, mode)
			if _, err := tlsClient(t, s, rootUser, rootPwd, p.clientTLS(true)); err != nil {
				t.Fatalf("TLS: %v", err)
			}
			if _, err := tlsClient(t, s, rootUser, rootPwd, nil); err != nil {
				t.Fatalf("plaintext: %v", err)
			}
		})
	}
}

// TestTLSX509Authentication: a client logs in by its certificate as the
// $external user named by the certificate's subject.
func TestTLSX509Authentication(t *testing.T) {
	s, p, logs := tlsServer(t, server.TLSAllow)
	root := connect(t, s)
	x509URI := func() string {
		return strings.Replace(plainHostURI(s), "/?", "/?authMechanism=MONGODB-X509&authSource=$external&", 1)
	}
	connectX509 := func(cfg *tls.Config) (*mongo.Client, error) {
		c, err := mongo.Connect(options.Client().ApplyURI(x509URI()).SetTLSConfig(cfg).
			SetServerSelectionTimeout(1500 * time.Millisecond).SetTimeout(10 * time.Second))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		return c, c.Ping(ctxT(t), nil)
	}
	_, err := connectX509(p.clientTLS(true))
	wantCode(t, err, 11, `Could not find user "CN=client" for db "$external"`)
	runCmd(t, root.Database("$external"), bson.D{{Key: "createUser", Value: "CN=client"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "test"}}}}})
	c, err := connectX509(p.clientTLS(true))
	if err != nil {
		t.Fatalf("X.509 login: %v", err)
	}
	if _, err := c.Database("test").Collection("c").InsertOne(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	err = c.Database("other").RunCommand(ctxT(t), bson.D{{Key: "find", Value: "c"}}).Err()
	wantCode(t, err, 13, "not authorized on other")
	status := runCmd(t, c.Database("test"), bson.D{{Key: "connectionStatus", Value: 1}})
	users := field(t, field(t, status, "authInfo").(bson.D), "authenticatedUsers").(bson.A)
	if len(users) != 1 || field(t, users[0].(bson.D), "user") != "CN=client" || field(t, users[0].(bson.D), "db") != "$external" {
		t.Fatalf("authInfo = %v", status)
	}
	info := runCmd(t, root.Database("$external"), bson.D{{Key: "usersInfo", Value: "CN=client"}})
	u := field(t, info, "users").(bson.A)[0].(bson.D)
	if mechs := field(t, u, "mechanisms").(bson.A); len(mechs) != 1 || mechs[0] != "external" {
		t.Fatalf("usersInfo = %v", info)
	}
	// Without TLS there is no certificate to go by.
	anon := connect(t, &testServer{uri: plainHostURI(s)})
	err = anon.Database("$external").RunCommand(ctxT(t), bson.D{{Key: "authenticate", Value: 1}, {Key: "mechanism", Value: "MONGODB-X509"}}).Err()
	wantCode(t, err, 18, "No verified subject name available from client")
	waitForLog(t, logs, "no verified client certificate")
}

// plainHostURI is the server's address without credentials or TLS options.
func plainHostURI(s *testServer) string {
	return "mongodb://" + s.app.Addr().String() + "/?directConnection=true"
}

// TestTLSFromConfigFile: a server started as mongod is, from a config
// file whose net.tls section requires TLS, refuses plaintext clients and
// serves a client that trusts its CA, with no client certificate since
// the file allows that.
func TestTLSFromConfigFile(t *testing.T) {
	p := newPKI(t)
	conf := filepath.Join(t.TempDir(), "mayfly.conf")
	text := "net:\n  tls:\n    mode: requireTLS\n    certificateKeyFile: " + p.ServerFile +
		"\n    CAFile: " + p.CAFile + "\n    allowConnectionsWithoutCertificates: true\n"
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	if _, err := startMayfly(t, buildBinary(t), filepath.Join(t.TempDir(), "data"), addr, "--config", conf); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	secure, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?tls=true").
		SetTLSConfig(p.clientTLS(false)).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Disconnect(context.Background())
	if _, err := secure.Database("shop").Collection("carts").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert over TLS: %v", err)
	}
	plain, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/").SetServerSelectionTimeout(1500 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Disconnect(context.Background())
	if err := plain.Ping(ctx, nil); err == nil {
		t.Fatal("a plaintext client reached a server whose config file requires TLS")
	}
}
