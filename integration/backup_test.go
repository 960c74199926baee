package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// ackLog records the _ids whose inserts were acknowledged, in order.
type ackLog struct {
	mu  sync.Mutex
	ids []int64
}

func (a *ackLog) add(id int64) {
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.mu.Unlock()
}

func (a *ackLog) snapshot() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int64(nil), a.ids...)
}

// TestBackupUnderWriteLoad runs `mayfly backup` against a server taking
// inserts from four clients, then serves the backup: every insert
// acknowledged before the backup began is there, with the TTL index, which
// goes on expiring.
func TestBackupUnderWriteLoad(t *testing.T) {
	bin := buildBinary(t)
	src := startServer(t, app.Config{DataDir: t.TempDir()})
	c := connect(t, src)
	db := c.Database("shop")
	createTTL(t, db, "sessions", "at", 2)
	expiring := bson.D{{Key: "_id", Value: int64(-1)}, {Key: "at", Value: time.Now()}}
	if _, err := db.Collection("sessions").InsertOne(ctxT(t), expiring); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	var acks ackLog
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			coll := db.Collection("sessions")
			for ctx.Err() == nil {
				id := next.Add(1)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: time.Now().Add(time.Hour)},
					{Key: "pad", Value: strings.Repeat("p", 200)}})
				if err == nil {
					acks.add(id)
				}
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	time.Sleep(300 * time.Millisecond)

	before := acks.snapshot()
	dir := filepath.Join(t.TempDir(), "backup")
	out, err := exec.Command(bin, "backup", "--addr", src.app.Addr().String(), "--to", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mayfly backup: %v\n%s", err, out)
	}
	time.Sleep(100 * time.Millisecond)
	stop()
	wg.Wait()
	if len(before) < 100 || len(acks.snapshot()) <= len(before) {
		t.Fatalf("the load must run before and during the backup: %d acknowledged before, %d in all", len(before), len(acks.snapshot()))
	}
	again, err := exec.Command(bin, "backup", "--addr", src.app.Addr().String(), "--to", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(again), "already exists") {
		t.Fatalf("a second backup into the same directory must fail: %v %s", err, again)
	}

	restored := connect(t, startServer(t, app.Config{DataDir: dir}))
	coll := restored.Database("shop").Collection("sessions")
	cur, err := coll.Find(ctxT(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 0}}}})
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for cur.Next(ctxT(t)) {
		have[cur.Current.Lookup("_id").AsInt64()] = true
	}
	missing := 0
	for _, id := range before {
		if !have[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d inserts acknowledged before the backup are missing from it", missing, len(before))
	}
	t.Logf("backup holds %d documents; %d were acknowledged before it began, %d by the end of the load",
		len(have), len(before), len(acks.snapshot()))

	specs, err := coll.Indexes().ListSpecifications(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	ttl := false
	for _, s := range specs {
		if s.Name == "at_1" && s.ExpireAfterSeconds != nil && *s.ExpireAfterSeconds == 2 {
			ttl = true
		}
	}
	if !ttl {
		t.Fatalf("the TTL index is not in the backup: %+v", specs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var raw bson.Raw
		err := restored.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&raw)
		if err != nil {
			t.Fatal(err)
		}
		if raw.Lookup("metrics", "ttl", "deletedDocuments").AsInt64() >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server on the backup did not expire the expired document")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBackupRefusedInMemory(t *testing.T) {
	db := newDB(t)
	err := db.Client().Database("admin").RunCommand(ctxT(t), bson.D{{Key: "mayflyCheckpoint", Value: 1},
		{Key: "to", Value: filepath.Join(t.TempDir(), "b")}}).Err()
	wantCode(t, err, 20, "in memory")
	err = db.Client().Database("admin").RunCommand(ctxT(t), bson.D{{Key: "mayflyCheckpoint", Value: 1}, {Key: "to", Value: "rel/dir"}}).Err()
	wantCode(t, err, 2, "absolute")
}

// TestBackupWithAuthAndTLS: `mayfly backup` logs in as mongodump does
// (--username, --password or MAYFLY_PASSWORD, --authenticationDatabase)
// and speaks TLS (--tls, --tlsCAFile, --tlsCertificateKeyFile); without a
// login an access-controlled server refuses it, naming the command.
func TestBackupWithAuthAndTLS(t *testing.T) {
	bin := buildBinary(t)
	p := newPKI(t)
	s, logs := startAuthServerTLS(t, app.Config{DataDir: t.TempDir(), Security: app.Security{TLSMode: server.TLSRequire,
		TLS: tlsconf.Options{CertificateKeyFile: p.ServerFile, CAFile: p.CAFile}}}, p.clientTLS(true))
	s.uri += "&tls=true&tlsCAFile=" + p.CAFile + "&tlsCertificateKeyFile=" + p.ClientFile
	createUser(t, connect(t, s), "admin", "ops", "b4ckup-pw", bson.A{"clusterAdmin"})
	tlsArgs := []string{"--tls", "--tlsCAFile", p.CAFile, "--tlsCertificateKeyFile", p.ClientFile}
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"backup", "--addr", s.app.Addr().String()}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dir := func() string { return filepath.Join(t.TempDir(), "backup") }

	out, err := run(nil, append([]string{"--to", dir()}, tlsArgs...)...)
	if err == nil || !strings.Contains(out, "Command mayflyCheckpoint requires authentication") {
		t.Fatalf("without a login: %v\n%s", err, out)
	}
	out, err = run(nil, append([]string{"--to", dir(), "--username", "ops", "--password", "wrong"}, tlsArgs...)...)
	if err == nil || !strings.Contains(out, "Authentication failed") {
		t.Fatalf("a wrong password: %v\n%s", err, out)
	}
	target := dir()
	out, err = run([]string{"MAYFLY_PASSWORD=b4ckup-pw"}, append([]string{"--to", target, "--username", "ops", "--authenticationDatabase", "admin"}, tlsArgs...)...)
	if err != nil {
		t.Fatalf("backup as ops over TLS: %v\n%s", err, out)
	}
	restored := connect(t, startServer(t, app.Config{DataDir: target}))
	if n, err := restored.Database("admin").Collection("system.users").CountDocuments(ctxT(t), bson.D{}); err != nil || n != 2 {
		t.Fatalf("the backup holds %d users (%v), want root and ops", n, err)
	}
	if strings.Contains(logs.String(), "b4ckup-pw") {
		t.Error("the password reached the server's log")
	}
}
