package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
)

func TestRestartKeepsCollectionsIndexesDocuments(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, app.Config{DataDir: dir})
	c := connect(t, s).Database("shop").Collection("carts")
	ctx := ctxT(t)
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cartID", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "cartID", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	s.stop(t)

	s2 := startServer(t, app.Config{DataDir: dir})
	c2 := connect(t, s2).Database("shop").Collection("carts")
	n, err := c2.CountDocuments(ctx, bson.D{})
	if err != nil || n != 100 {
		t.Fatalf("after restart: %d documents, %v", n, err)
	}
	_, err = c2.InsertOne(ctx, bson.D{{Key: "cartID", Value: 5}})
	wantCode(t, err, 11000, "index: cartID_1")
}

// binaryEnv names a cmd/mayfly binary built beforehand, for test
// processes that each run a few tests (scripts/integration.sh): without it
// every process would link its own. Its file must be named mayfly: the
// README's blocks run it by that name from its directory.
const binaryEnv = "MAYFLY_INTEGRATION_BIN"

// buildBinary returns cmd/mayfly built once for the whole test run: the
// link alone takes seconds, and a score of tests start the binary.
func buildBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if bin := os.Getenv(binaryEnv); bin != "" {
			built.path = bin
			if filepath.Base(bin) != "mayfly" {
				built.err = fmt.Errorf("%s=%s: the binary's file must be named mayfly", binaryEnv, bin)
			}
			return
		}
		built.path = filepath.Join(built.dir, "mayfly")
		out, err := exec.Command("go", "build", "-o", built.path, "../cmd/mayfly").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// built is the test run's one build of cmd/mayfly, in a directory
// TestMain removes at the end.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mayfly-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	built.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// process is a mayfly binary running as a child process.
type process struct {
	cmd    *exec.Cmd
	addr   string
	log    string // the file its output goes to ("" for startBinary's)
	killed bool   // killed by the test, or given up on
}

func startBinary(t *testing.T, bin, dir, addr string) *process {
	t.Helper()
	return startCmd(t, exec.Command(bin, "--addr", addr, "--dbpath", dir, "--log-level", "warn"), addr)
}

// startCmd starts cmd, a server listening on addr, and waits until it
// takes connections.
func startCmd(t *testing.T, cmd *exec.Cmd, addr string) *process {
	t.Helper()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, addr: addr}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server at %s did not start", addr)
	return nil
}

func (p *process) client(t *testing.T) *mongo.Client {
	c, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://%s/?directConnection=true", p.addr)).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func TestKill9KeepsJournaledWrites(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	p := startBinary(t, bin, dir, addr)
	coll := p.client(t).Database("d").Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	ctx := ctxT(t)
	const n = 300
	for i := 0; i < n; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = p.cmd.Process.Wait()

	p2 := startBinary(t, bin, dir, addr)
	got, err := p2.client(t).Database("d").Collection("c").CountDocuments(ctx, bson.D{})
	if err != nil || got != n {
		t.Fatalf("after kill -9: %d of %d acknowledged documents, %v", got, n, err)
	}
}
