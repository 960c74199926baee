package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// replSet is three (or more) real mayfly processes on 127.0.0.1 forming
// one replica set, as a user starts them.
type replSet struct {
	t     *testing.T
	bin   string
	name  string
	dirs  []string
	addrs []string
	procs []*process
	args  []string
}

// startReplSet starts n members and initiates the set from the first.
func startReplSet(t *testing.T, n int, args ...string) *replSet {
	t.Helper()
	return startNamedReplSet(t, "rs0", n, args...)
}

// startNamedReplSet is startReplSet for a set named name.
func startNamedReplSet(t *testing.T, name string, n int, args ...string) *replSet {
	t.Helper()
	rs := &replSet{t: t, bin: buildBinary(t), name: name, args: args}
	for i := 0; i < n; i++ {
		rs.dirs = append(rs.dirs, t.TempDir())
		rs.addrs = append(rs.addrs, freePort(t))
	}
	rs.procs = make([]*process, n)
	for i := range rs.addrs {
		rs.start(i)
	}
	members := bson.A{}
	for i, a := range rs.addrs {
		members = append(members, bson.D{{Key: "_id", Value: int32(i)}, {Key: "host", Value: a}})
	}
	cfg := bson.D{{Key: "_id", Value: rs.name}, {Key: "members", Value: members}}
	if slices.Contains(args, "--configsvr") {
		cfg = append(cfg, bson.E{Key: "configsvr", Value: true}) // as mongod requires of a config server's set
	}
	// The budget is ctxT's: under make test's parallel groups a member's
	// first handshake once took the whole of a 10 s budget. Slow starts
	// are logged, so that one that grows is seen.
	c := quickClient(t, rs.addrs[0], 30*time.Second)
	began := time.Now()
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate after %v: %v", time.Since(began), err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Logf("replSetInitiate took %v", took)
	}
	rs.waitPrimary(-1, 15*time.Second)
	return rs
}

// start (re)starts member i on its address and data directory.
func (rs *replSet) start(i int, extra ...string) {
	rs.t.Helper()
	args := append([]string{"--replSet", rs.name, "--ttl-monitor-sleep-secs", "1"}, rs.args...)
	args = append(args, extra...)
	p, err := startMayfly(rs.t, rs.bin, rs.dirs[i], rs.addrs[i], args...)
	if err != nil {
		rs.t.Fatalf("member %d: %v", i, err)
	}
	rs.procs[i] = p
}

// uri is the seed list with replicaSet=rs0.
func (rs *replSet) uri() string {
	return fmt.Sprintf("mongodb://%s/?replicaSet=%s", strings.Join(rs.addrs, ","), rs.name)
}

// client connects through the seed list, as applications do.
func (rs *replSet) client(opts ...*options.ClientOptions) *mongo.Client {
	rs.t.Helper()
	o := append([]*options.ClientOptions{options.Client().ApplyURI(rs.uri()).SetServerSelectionTimeout(20 * time.Second)}, opts...)
	c, err := mongo.Connect(o...)
	if err != nil {
		rs.t.Fatal(err)
	}
	rs.t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// direct connects to member i alone.
func (rs *replSet) direct(i int) *mongo.Client {
	return quickClient(rs.t, rs.addrs[i], 10*time.Second)
}

func (rs *replSet) hello(i int) bson.D {
	rs.t.Helper()
	var d bson.D
	c := rs.direct(i)
	defer func() { _ = c.Disconnect(context.Background()) }()
	if err := c.Database("admin").RunCommand(ctxT(rs.t), bson.D{{Key: "hello", Value: 1}}).Decode(&d); err != nil {
		rs.t.Fatalf("hello on member %d: %v", i, err)
	}
	return d
}

// waitPrimary waits until a member other than not (-1: any) is a
// writable primary and returns its index.
func (rs *replSet) waitPrimary(not int, timeout time.Duration) int {
	rs.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, a := range rs.addrs {
			if i == not || rs.procs[i] == nil {
				continue
			}
			if isPrimary(a) {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs.dumpRaft()
	rs.t.Fatalf("no primary within %v", timeout)
	return -1
}

// dumpRaft logs, for a set that failed to elect, each live member's raft
// lines and its goroutines in the repl package: it ends each member with
// SIGQUIT, whose stack dump goes to the member's log.
func (rs *replSet) dumpRaft() {
	for i, p := range rs.procs {
		if p == nil || p.killed || p.log == "" {
			continue
		}
		p.killed = true // its log is summarized here, not printed again
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		_, _ = p.cmd.Process.Wait()
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		rs.t.Logf("member %d (%s), raft's last lines and goroutines in repl:\n%s", i, rs.addrs[i], raftSummary(string(b)))
	}
}

// raftSummary is a member log's last 30 raft lines and the goroutines of
// its stack dump that run in the repl package.
func raftSummary(log string) string {
	head, _, _ := strings.Cut(log, "SIGQUIT: quit")
	var raft []string
	for _, l := range strings.Split(head, "\n") {
		if strings.Contains(l, "component=raft") || strings.Contains(l, "replica set") {
			raft = append(raft, l)
		}
	}
	raft = raft[max(0, len(raft)-30):]
	return strings.Join(raft, "\n") + "\n" + goroutinesIn(log, "internal/repl")
}

func isPrimary(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetServerSelectionTimeout(time.Second))
	if err != nil {
		return false
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	var d struct {
		IsWritablePrimary bool `bson:"isWritablePrimary"`
	}
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&d)
	return err == nil && d.IsWritablePrimary
}

// kill9 kills member i with SIGKILL.
func (rs *replSet) kill9(i int) {
	rs.procs[i].kill9()
	rs.procs[i] = nil
}

// dbHashes returns each running member's dbHash md5 of db once all have
// applied the same log position (they are compared until equal or the
// timeout passes).
func (rs *replSet) waitSameHash(db string, timeout time.Duration) string {
	rs.t.Helper()
	deadline := time.Now().Add(timeout)
	var last []string
	for time.Now().Before(deadline) {
		last = rs.hashes(db)
		same := len(last) > 0
		for _, h := range last {
			same = same && h == last[0]
		}
		if same {
			return last[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	rs.t.Fatalf("members' dbHash differ after %v: %v", timeout, last)
	return ""
}

func (rs *replSet) hashes(db string) []string {
	var out []string
	for i, p := range rs.procs {
		if p == nil {
			continue
		}
		c := rs.direct(i)
		var d struct {
			MD5 string `bson:"md5"`
		}
		err := c.Database(db).RunCommand(ctxT(rs.t), bson.D{{Key: "dbHash", Value: 1}}, options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())).Decode(&d)
		_ = c.Disconnect(context.Background())
		if err != nil {
			rs.t.Fatalf("dbHash on member %d: %v", i, err)
		}
		out = append(out, d.MD5)
	}
	return out
}
