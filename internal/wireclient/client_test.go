package wireclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// testTimeout bounds every exchange: generous for a loaded 2-core
// machine, far below the test binary's own timeout.
const testTimeout = 30 * time.Second

// startServer starts an in-memory Mayfly on a free loopback port.
func startServer(t *testing.T, sec app.Security) string {
	t.Helper()
	a, err := app.Start(app.Config{Addr: "127.0.0.1:0", InMemory: true, Security: sec,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return a.Addr().String()
}

func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c := New(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func run(t *testing.T, c *Client, host, db string, cmd bson.D) bson.D {
	t.Helper()
	reply, err := c.Run(ctxT(t), host, db, cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	if err := ReplyError(reply); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return reply
}

func field(t *testing.T, d bson.D, path string) any {
	t.Helper()
	v, ok := bsonutil.LookupPath(d, path)
	if !ok {
		t.Fatalf("no %s in %v", path, d)
	}
	return v
}

// TestRunCommands: ping, an insert, and a find whose cursor is drained
// with getMore, all on one pooled connection.
func TestRunCommands(t *testing.T) {
	host := startServer(t, app.Security{})
	c := newClient(t, Options{})
	run(t, c, host, "admin", bson.D{{Key: "ping", Value: int32(1)}})
	docs := bson.A{}
	for i := range 7 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
	}
	ins := run(t, c, host, "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	if n := field(t, ins, "n"); n != int32(7) {
		t.Fatalf("inserted %v", n)
	}
	reply := run(t, c, host, "app", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(3)}})
	seen := len(field(t, reply, "cursor.firstBatch").(bson.A))
	id := field(t, reply, "cursor.id").(int64)
	for rounds := 0; id != 0 && rounds < 10; rounds++ {
		reply = run(t, c, host, "app", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: int32(3)}})
		seen += len(field(t, reply, "cursor.nextBatch").(bson.A))
		id = field(t, reply, "cursor.id").(int64)
	}
	if seen != 7 || id != 0 {
		t.Fatalf("find + getMore saw %d documents, cursor %d", seen, id)
	}
	if st := c.Stats(host); st.Open != 1 || st.Idle != 1 {
		t.Fatalf("sequential commands used %+v, want one connection", st)
	}
	bad, err := c.Run(ctxT(t), host, "app", bson.D{{Key: "noSuchCommand", Value: int32(1)}})
	var cmdErr *CommandError
	if err != nil || !errors.As(ReplyError(bad), &cmdErr) || cmdErr.Code != 59 || cmdErr.CodeName != "CommandNotFound" {
		t.Fatalf("unknown command: %v, %v", bad, err)
	}
}

// TestCancelClosesConnection: a getMore waiting on a change stream is
// abandoned when its context is cancelled; Run returns at once and the
// connection is closed, not returned to the pool.
func TestCancelClosesConnection(t *testing.T) {
	host := startServer(t, app.Security{})
	c := newClient(t, Options{})
	run(t, c, host, "app", bson.D{{Key: "create", Value: "c"}})
	reply := run(t, c, host, "app", bson.D{{Key: "aggregate", Value: "c"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}})
	id := field(t, reply, "cursor.id").(int64)
	ctx, cancel := context.WithCancel(ctxT(t))
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Run(ctx, host, "app", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"},
		{Key: "maxTimeMS", Value: int64(60_000)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled getMore: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("cancel took %v", took)
	}
	if st := c.Stats(host); st.Open != 0 || st.Idle != 0 {
		t.Fatalf("after cancel the pool holds %+v", st)
	}
	run(t, c, host, "admin", bson.D{{Key: "ping", Value: int32(1)}}) // a fresh connection works
}

// TestDeadlineOnSilentServer: a peer that accepts and never answers
// costs the caller its context's deadline, not more, and leaves no
// connection behind.
func TestDeadlineOnSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = nc.Close() })
		}
	}()
	c := newClient(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Run(ctx, ln.Addr().String(), "admin", bson.D{{Key: "ping", Value: int32(1)}})
	if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("silent server: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("deadline of 300ms took %v", took)
	}
	if st := c.Stats(ln.Addr().String()); st.Open != 0 {
		t.Fatalf("pool after timeout %+v", st)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestPoolBoundAndIdleClose: no more than MaxConnsPerHost connections
// open to a host however many callers wait, and the janitor closes those
// idle for IdleTimeout by the injected clock.
func TestPoolBoundAndIdleClose(t *testing.T) {
	host := startServer(t, app.Security{})
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	c := newClient(t, Options{MaxConnsPerHost: 2, IdleTimeout: time.Minute, Clock: clk})
	ctx := ctxT(t)
	held := make([]*conn, 0, 2)
	p, _ := c.pool(host)
	for range 2 {
		cn, err := p.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, cn)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Run(short, host, "admin", bson.D{{Key: "ping", Value: int32(1)}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third caller got through a pool of two: %v", err)
	}
	for _, cn := range held {
		p.release(cn, true)
	}
	if st := c.Stats(host); st.Open != 2 || st.Idle != 2 {
		t.Fatalf("after release %+v", st)
	}
	clk.Advance(30 * time.Second) // the janitor looks, nothing is old enough
	clk.Advance(31 * time.Second)
	deadline := time.Now().Add(testTimeout)
	for c.Stats(host).Open != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.Stats(host); st.Open != 0 || st.Idle != 0 {
		t.Fatalf("idle connections not closed: %+v", st)
	}
}

// TestPoolWaiterTakesReleased: a caller waiting on a full pool takes the
// connection the next caller releases; it does not wait for one to close
// (the router's 64 clients over 16 connections a shard once stalled for
// the idle timeout).
func TestPoolWaiterTakesReleased(t *testing.T) {
	host := startServer(t, app.Security{})
	c := newClient(t, Options{MaxConnsPerHost: 1, IdleTimeout: time.Hour})
	p, _ := c.pool(host)
	ctx := ctxT(t)
	for round := range 3 {
		held, err := p.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *conn, 1)
		go func() {
			cn, err := p.acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- cn
		}()
		for p.stats().Open != 1 { // let the waiter block on the full pool
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		p.release(held, true)
		if cn := <-got; cn != held {
			t.Fatalf("round %d: the waiter got %p, not the released %p", round, cn, held)
		}
		p.release(held, true)
	}
	if st := c.Stats(host); st.Open != 1 || st.Idle != 1 {
		t.Fatalf("after the rounds %+v", st)
	}
}

// TestKeyFileAuth: with a keyFile, a client without credentials is
// refused data commands, one with the key's __system credential runs
// them, and one with another key fails to connect; without a keyFile no
// credential is needed.
func TestKeyFileAuth(t *testing.T) {
	path, kf := writeKeyFile(t, "c2hhcmRzIGFuZCByb3V0ZXJz\n")
	host := startServer(t, app.Security{KeyFile: path})
	find := bson.D{{Key: "find", Value: "c"}}

	anon := newClient(t, Options{})
	reply, err := anon.Run(ctxT(t), host, "app", find)
	var cmdErr *CommandError
	if err != nil || !errors.As(ReplyError(reply), &cmdErr) || cmdErr.CodeName != "Unauthorized" {
		t.Fatalf("unauthenticated find: %v %v", reply, err)
	}
	member := newClient(t, Options{Credential: kf.Credential()})
	run(t, member, host, "app", find)

	other, err := auth.ParseKey("other", "YW5vdGhlciBrZXk=")
	if err != nil {
		t.Fatal(err)
	}
	stranger := newClient(t, Options{Credential: other.Credential()})
	if _, err := stranger.Run(ctxT(t), host, "app", find); err == nil {
		t.Fatal("a client with another key connected")
	}
	if st := stranger.Stats(host); st.Open != 0 {
		t.Fatalf("failed login left %+v", st)
	}

	open := startServer(t, app.Security{})
	run(t, newClient(t, Options{}), open, "app", find)
}

// TestTLS: over TLS (server requires it) with the key's credential; a
// plaintext client cannot connect.
func TestTLS(t *testing.T) {
	certFile, roots := selfSigned(t)
	path, kf := writeKeyFile(t, "dGxzIHJvdXRlciBrZXk=")
	host := startServer(t, app.Security{KeyFile: path, TLSMode: server.TLSRequire,
		TLS: tlsconf.Options{CertificateKeyFile: certFile}})
	secure := newClient(t, Options{TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, Credential: kf.Credential()})
	run(t, secure, host, "admin", bson.D{{Key: "ping", Value: int32(1)}})
	run(t, secure, host, "app", bson.D{{Key: "find", Value: "c"}})
	plain := newClient(t, Options{DialTimeout: 5 * time.Second, Credential: kf.Credential()})
	if _, err := plain.Run(ctxT(t), host, "admin", bson.D{{Key: "ping", Value: int32(1)}}); err == nil {
		t.Fatal("plaintext got through requireTLS")
	}
}

// writeKeyFile writes a keyFile as mongod requires it (owner-only) and
// loads it.
func writeKeyFile(t *testing.T, content string) (string, *auth.KeyFile) {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(content), 0o400); err != nil {
		t.Fatal(err)
	}
	kf, err := auth.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, kf
}

// selfSigned writes a certificate and key for 127.0.0.1 to one PEM file
// (as tlsCertificateKeyFile takes them) and returns it with a pool that
// trusts it.
func selfSigned(t *testing.T) (string, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	file := filepath.Join(t.TempDir(), "server.pem")
	if err := os.WriteFile(file, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return file, roots
}
