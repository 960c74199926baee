package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/dirlock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// TestHostileStartOnFullDisk: a server stopped on a filesystem that then
// fills to the last byte starts again, serves every acknowledged document,
// refuses writes with 14031 without busying itself meanwhile, and takes
// j: true writes once space is freed, with no restart. The filesystem is
// a real tmpfs the test mounts on the data directory, so every write the
// start makes (the lock file, pebble's files, the server's own writes)
// meets the real error; without the right to mount (not root) the test
// runs on the storage fault layer instead.
func TestHostileStartOnFullDisk(t *testing.T) {
	if !canMount(t) {
		t.Log("cannot mount a tmpfs (not root): the full disk is the storage fault layer")
		startOnFaultLayer(t)
		return
	}
	bin := buildBinary(t)
	for _, stop := range []struct {
		name string
		stop func(*process)
		// removeLock starts the full disk without a lock file, as an older
		// server's clean stop left it: the disk has no room for the new
		// file's pid. Otherwise the file holds the stopped server's pid,
		// which the new one overwrites in place.
		removeLock bool
	}{
		{name: "SIGTERM", stop: stopClean, removeLock: true},
		{name: "kill -9", stop: func(p *process) { p.kill9() }},
	} {
		t.Run(stop.name, func(t *testing.T) {
			fullStart(t, bin, stop.stop, stop.removeLock)
		})
	}
	t.Run("replica set member", func(t *testing.T) { fullStartMember(t, bin) })
}

// fullDiskSize is the tmpfs's size: room for a server's files (pebble
// preallocates a 26 MiB WAL) and the test's data, small enough to fill at
// once.
const fullDiskSize = 64 << 20

// Sizes of the test's data: acknowledged documents and TTL documents
// expired before the full start and not.
const (
	fullDocs      = 300
	fullExpired   = 40
	fullUnexpired = 20
)

func fullStart(t *testing.T, bin string, stop func(*process), removeLock bool) {
	dir := filepath.Join(t.TempDir(), "data")
	mountTmpfs(t, dir, fullDiskSize)
	addr := freePort(t)
	// The first server does not delete: the expired documents are still
	// stored when the disk is full, so the second's TTL monitor finds work
	// it cannot do.
	first, err := startMayfly(t, bin, dir, addr, "--setParameter", "ttlMonitorEnabled=false")
	if err != nil {
		t.Fatal(err)
	}
	acked := writeFullDiskData(t, addr)
	stop(first)
	if removeLock {
		if err := os.Remove(filepath.Join(dir, dirlock.FileName)); err != nil {
			t.Fatal(err)
		}
	}
	filler := fillDisk(t, dir)

	began := time.Now()
	p, err := startMayfly(t, bin, dir, addr, "--ttl-monitor-sleep-secs", "1")
	if err != nil {
		t.Fatalf("start on a full disk: %v", err)
	}
	c := quickClient(t, addr, 10*time.Second)
	db := c.Database("test")
	fullDiskReads(t, db, acked)
	t.Logf("start on a full disk: every acknowledged document read %v after exec", time.Since(began).Round(time.Millisecond))
	if err := db.RunCommand(ctxT(t), bson.D{{Key: "hello", Value: 1}}).Err(); err != nil {
		t.Fatalf("hello on a full disk: %v", err)
	}
	lockNames(t, dir, p, !removeLock)
	secondRefused(t, bin, dir, p, !removeLock)
	coll := db.Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	writesRefused(t, db, coll, 1000)
	idleWhileFull(t, p)

	freed := time.Now()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := journaledWriteWithin(t, coll, 30*time.Second, outOfDiskSpace, refusedMsg)
	t.Logf("space freed: first j:true write acknowledged after %v", time.Since(freed).Round(time.Millisecond))
	acked[id] = int32(id)
	fullDiskReads(t, db, acked)
	expiredDeleted(t, c)
	lockNames(t, dir, p, true)
}

// fullStartMember: a one-member replica set stopped (SIGTERM) on a disk
// that then fills starts again and answers hello; its raft, which stops for
// good at a log write that fails, starts once the storage takes writes, so
// until then writes get NotWritablePrimary, and within 30 s of space being
// freed the member is primary again and takes j: true writes with every
// acknowledged document there.
func fullStartMember(t *testing.T, bin string) {
	dir := filepath.Join(t.TempDir(), "data")
	mountTmpfs(t, dir, fullDiskSize)
	rs := &replSet{t: t, bin: bin, name: "rs0", dirs: []string{dir}, addrs: []string{freePort(t)}, procs: make([]*process, 1)}
	rs.start(0, "--setParameter", "ttlMonitorEnabled=false")
	admin := quickClient(t, rs.addrs[0], 10*time.Second).Database("admin")
	member := bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: rs.addrs[0]}}
	initiate := bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: rs.name}, {Key: "members", Value: bson.A{member}}}}}
	if err := admin.RunCommand(ctxT(t), initiate).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	rs.waitPrimary(-1, 15*time.Second)
	acked := writeFullDiskData(t, rs.addrs[0])
	stopClean(rs.procs[0])
	filler := fillDisk(t, dir)

	rs.start(0)
	c := quickClient(t, rs.addrs[0], 10*time.Second)
	var hello struct {
		SetName string `bson:"setName"`
	}
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil || hello.SetName != rs.name {
		t.Fatalf("hello on a full disk: %+v, %v", hello, err)
	}
	coll := c.Database("test").Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1000}})
	wantCode(t, err, notWritablePrimary, "not primary")
	idleWhileFull(t, rs.procs[0])

	freed := time.Now()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := journaledWriteWithin(t, coll, 30*time.Second, notWritablePrimary, "not primary")
	t.Logf("space freed: member primary and first j:true write acknowledged after %v", time.Since(freed).Round(time.Millisecond))
	acked[id] = int32(id)
	fullDiskReads(t, c.Database("test"), acked)
	expiredDeleted(t, c)
}

// notWritablePrimary is MongoDB's NotWritablePrimary code.
const notWritablePrimary = 10107

// stopClean sends SIGTERM and waits for the exit.
func stopClean(p *process) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = p.cmd.Process.Wait()
	p.killed = true
}

// writeFullDiskData writes, all j: true, fullDocs documents (_id i, k i)
// into test.docs with an index on k, and into the TTL collection
// test.sessions fullExpired documents already expired and fullUnexpired
// expiring in an hour. It returns the acknowledged docs, _id → k.
func writeFullDiskData(t *testing.T, addr string) map[int32]int32 {
	t.Helper()
	ctx := ctxT(t)
	db := quickClient(t, addr, 10*time.Second).Database("test", options.Database().SetWriteConcern(writeconcern.Journaled()))
	docs := db.Collection("docs")
	if _, err := docs.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	acked := map[int32]int32{}
	for i := range int32(fullDocs) {
		if _, err := docs.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: strings.Repeat("x", 500)}}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
		acked[i] = i
	}
	sessions := db.Collection("sessions")
	if _, err := sessions.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range fullExpired + fullUnexpired {
		at := now.Add(-time.Minute)
		if i >= fullExpired {
			at = now.Add(time.Hour)
		}
		if _, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: at}}); err != nil {
			t.Fatalf("insert session %d: %v", i, err)
		}
	}
	return acked
}

// fillDisk fills the filesystem holding dir to its last byte with a file
// in dir, and returns the file's path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Halving chunks: the last write that fails is of one byte.
	for chunk := 1 << 20; chunk >= 1; chunk /= 2 {
		buf := make([]byte, chunk)
		for range fullDiskSize/chunk + 1 {
			if _, err = f.Write(buf); err != nil {
				break
			}
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("filling the disk with %d-byte writes: %v", chunk, err)
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Bavail != 0 {
		t.Fatalf("after filling: %d blocks free, %v", st.Bavail, err)
	}
	return path
}

// fullDiskReads checks that test.docs holds exactly the acknowledged
// documents, by a collection scan and by the index on k, and that
// test.sessions shows the unexpired documents only.
func fullDiskReads(t *testing.T, db *mongo.Database, acked map[int32]int32) {
	t.Helper()
	for _, opts := range []*options.FindOptionsBuilder{options.Find(), options.Find().SetHint(bson.D{{Key: "k", Value: 1}})} {
		got := map[int32]int32{}
		for _, d := range findWith(t, db.Collection("docs"), opts) {
			got[d.Lookup("_id").Int32()] = d.Lookup("k").Int32()
		}
		if fmt.Sprint(got) != fmt.Sprint(acked) {
			t.Fatalf("test.docs holds %d documents, want the %d acknowledged: %v", len(got), len(acked), got)
		}
	}
	sessions := findAll(t, db.Collection("sessions"))
	if len(sessions) != fullUnexpired {
		t.Fatalf("test.sessions shows %d documents, want the %d unexpired", len(sessions), fullUnexpired)
	}
	for _, d := range sessions {
		if id := d.Lookup("_id").Int32(); id < fullExpired {
			t.Fatalf("expired session %d returned", id)
		}
	}
}

// findWith returns every document of coll found with opts (a hint).
func findWith(t *testing.T, coll *mongo.Collection, opts *options.FindOptionsBuilder) []bson.Raw {
	t.Helper()
	cur, err := coll.Find(ctxT(t), bson.D{}, opts)
	if err != nil {
		t.Fatalf("find on %s: %v", coll.Name(), err)
	}
	var docs []bson.Raw
	if err := cur.All(ctxT(t), &docs); err != nil {
		t.Fatalf("find on %s: %v", coll.Name(), err)
	}
	return docs
}

// lockNames checks whether the data directory's lock file names p.
func lockNames(t *testing.T, dir string, p *process, want bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dirlock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if got := strings.TrimSpace(string(b)); (got == pid) != want || !want && got != "" {
		t.Fatalf("lock file holds %q; the server is %s (want it named: %v, else empty)", got, pid, want)
	}
}

// secondRefused starts a second server on dir and checks that it exits,
// refused with the running server's pid if the lock file names it and as
// unknown if not: never another process's.
func secondRefused(t *testing.T, bin, dir string, running *process, named bool) {
	t.Helper()
	holder := "unknown"
	if named {
		holder = strconv.Itoa(running.cmd.Process.Pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--addr", freePort(t), "--dbpath", dir).CombinedOutput()
	want := "data directory " + dir + " is in use by another mayfly (pid " + holder + ")"
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second server on the data directory: %v, %s; want refused with %q", err, out, want)
	}
}

// idleWhileFull checks that the server, idle on the full disk with expired
// documents it cannot delete, neither spins nor floods its log: over
// idleWindow it uses under a fifth of a core and logs at most 5 lines (a
// retry at the TTL monitor's 50 ms pace would log 60).
func idleWhileFull(t *testing.T, p *process) {
	t.Helper()
	const idleWindow = 3 * time.Second
	cpu0, lines0 := cpuTime(t, p), logLines(t, p)
	time.Sleep(idleWindow)
	cpu, lines := cpuTime(t, p)-cpu0, logLines(t, p)-lines0
	t.Logf("idle on a full disk for %v: %v CPU, %d log lines", idleWindow, cpu, lines)
	if cpu > idleWindow/5 {
		t.Errorf("%v of CPU in %v idle on a full disk: a retry loop", cpu, idleWindow)
	}
	if lines > 5 {
		t.Errorf("%d log lines in %v idle on a full disk:\n%s", lines, idleWindow, logTail(p.log))
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T, p *process) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// utime and stime are fields 14 and 15; the command name before them
	// is in parentheses and may hold spaces.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ, 100 on every Linux ABI Go supports
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

func logLines(t *testing.T, p *process) int {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// journaledWriteWithin inserts j: true documents until one is acknowledged,
// within limit; each refusal before must have the code and message. It
// returns the acknowledged _id.
func journaledWriteWithin(t *testing.T, coll *mongo.Collection, limit time.Duration, code int32, msg string) int32 {
	t.Helper()
	deadline := time.Now().Add(limit)
	for id := int32(2000); ; id++ {
		_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}})
		if err == nil {
			return id
		}
		wantCode(t, err, code, msg)
		if time.Now().After(deadline) {
			t.Fatalf("j:true writes still refused %v after space was freed: %v", limit, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expiredDeleted waits for the TTL monitor, idle while the disk was full,
// to delete the expired sessions once writes are taken again.
func expiredDeleted(t *testing.T, c *mongo.Client) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for statusMetric(t, c, "ttl", "deletedDocuments") < fullExpired {
		if time.Now().After(deadline) {
			t.Fatalf("TTL monitor deleted %d of %d expired documents 15s after space was freed",
				statusMetric(t, c, "ttl", "deletedDocuments"), fullExpired)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// canMount reports whether the test may mount filesystems (root).
func canMount(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("mount")
	return err == nil
}

// mountTmpfs mounts a tmpfs of size bytes on dir (created) and unmounts
// it when the test ends, after the servers it started are gone.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// startOnFaultLayer is the test without a real full filesystem: an
// in-process server over pebble's errorfs, which fails every write of
// pebble's files with ENOSPC.
func startOnFaultLayer(t *testing.T) {
	dir := t.TempDir()
	full := &faultfs.DiskFull{}
	fs := faultfs.Wrap(vfs.Default, full)
	first := startServer(t, app.Config{DataDir: dir, FS: fs})
	acked := map[int32]bool{}
	c := connect(t, first)
	insertAcked(t, c.Database("test").Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled())), acked, 0, 50)
	_ = c.Disconnect(ctxT(t))
	first.stop(t)

	full.Set(true)
	logs := &logRecorder{}
	srv := startServer(t, app.Config{DataDir: dir, FS: fs, RecoverInterval: 20 * time.Millisecond, Logger: slog.New(logs)})
	db := connect(t, srv).Database("test")
	coll := db.Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	readsWork(t, srv, coll, acked)
	writesRefused(t, db, coll, 1000)
	failsBefore := full.Fails()
	time.Sleep(500 * time.Millisecond)
	perSecond := float64(full.Fails()-failsBefore) / 0.5
	t.Logf("failed disk writes while idle on a full disk: %.0f/s", perSecond)
	if perSecond > 200 {
		t.Errorf("%.0f failed disk writes a second while idle: a retry loop", perSecond)
	}
	full.Set(false)
	waitForWrites(t, coll, acked)
	readsWork(t, srv, coll, acked)
}
