package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestReplicaSetClockSkewRefusesReads restarts a secondary with its clock
// 2 s ahead: beyond the 250 ms bound it must refuse reads (13436) and say
// why in replSetGetStatus, while a secondary with a good clock serves.
func TestReplicaSetClockSkewRefusesReads(t *testing.T) {
	rs := startReplSet(t, 3)
	primary := rs.waitPrimary(-1, 10*time.Second)
	skewed, good := (primary+1)%3, (primary+2)%3
	rs.kill9(skewed)
	rs.start(skewed, "--test-clock-skew", "2s")
	find := bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "test"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondaryPreferred"}}}}
	deadline := time.Now().Add(10 * time.Second)
	var reply bson.D
	for time.Now().Before(deadline) {
		reply = rawCall(t, rs.addrs[skewed], find)
		if msg, _ := lookupD(reply, "errmsg"); codeOf(reply) == 13436 && strings.Contains(msg.(string), "clock") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if codeOf(reply) != 13436 || !strings.Contains(field(t, reply, "errmsg").(string), "clock") {
		t.Fatalf("skewed secondary answered %v", reply)
	}
	if code := codeOf(rawCall(t, rs.addrs[good], find)); code != 0 {
		t.Fatalf("secondary with a good clock: code %d", code)
	}
	status := rawCall(t, rs.addrs[skewed], bson.D{{Key: "replSetGetStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	members, _ := field(t, status, "members").(bson.A)
	found := false
	for _, m := range members {
		d := m.(bson.D)
		if self, _ := lookupD(d, "self"); self == true {
			msg, _ := lookupD(d, "infoMessage")
			found = msg != nil && strings.Contains(msg.(string), "maxClockOffset")
		}
	}
	if !found {
		t.Fatalf("replSetGetStatus on the skewed member does not say why: %v", members)
	}
}

// TestReplicaSetPartitionedPrimary cuts the primary off from the other
// members (clients still reach it): it must not acknowledge a write, must
// step down, must never show that write, and the majority side must elect
// a primary that takes writes. After healing, the write is nowhere.
func TestReplicaSetPartitionedPrimary(t *testing.T) {
	rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
	old := rs.waitPrimary(-1, 10*time.Second)
	others := []string{}
	for i, a := range rs.addrs {
		if i != old {
			others = append(others, a)
		}
	}
	partition := func(i int, hosts []string) {
		arr := bson.A{}
		for _, h := range hosts {
			arr = append(arr, h)
		}
		if r := rawCall(t, rs.addrs[i], bson.D{{Key: "mayflyReplPartition", Value: arr}, {Key: "$db", Value: "admin"}}); codeOf(r) != 0 {
			t.Fatalf("partition: %v", r)
		}
	}
	partition(old, others)
	for i := range rs.addrs {
		if i != old {
			partition(i, []string{rs.addrs[old]})
		}
	}
	lost := bson.D{{Key: "insert", Value: "p"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "minority"}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}, {Key: "$db", Value: "test"}}
	done := make(chan bson.D, 1)
	go func() { done <- rawCall(t, rs.addrs[old], lost) }()
	time.Sleep(200 * time.Millisecond)
	readOld := bson.D{{Key: "find", Value: "p"}, {Key: "$db", Value: "test"}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}}}
	if r := rawCall(t, rs.addrs[old], readOld); strings.Contains(bsonText(r), "minority") {
		t.Fatalf("the isolated primary shows a write no majority has: %v", r)
	}
	var reply bson.D
	select {
	case reply = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the isolated primary neither acknowledged nor failed the write within 15s")
	}
	if codeOf(reply) == 0 {
		if _, wce := lookupD(reply, "writeConcernError"); !wce {
			t.Fatalf("the isolated primary acknowledged a write the majority lacks: %v", reply)
		}
	}
	next := rs.waitPrimary(old, 10*time.Second)
	if isPrimary(rs.addrs[old]) {
		t.Fatal("the isolated old primary still says it is primary")
	}
	if _, err := rs.direct(next).Database("test").Collection("p").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "majority"}}); err != nil {
		t.Fatalf("write on the majority side: %v", err)
	}
	for i := range rs.addrs {
		partition(i, nil)
	}
	rs.waitSameHash("test", 15*time.Second)
	for i := range rs.addrs {
		coll := rs.direct(i).Database("test").Collection("p", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
		n, err := coll.CountDocuments(context.Background(), bson.D{{Key: "_id", Value: "minority"}})
		if err != nil || n != 0 {
			t.Fatalf("member %d holds the unacknowledged write (%d, %v)", i, n, err)
		}
	}
}

func bsonText(d bson.D) string {
	raw, _ := bson.MarshalExtJSON(d, false, false)
	return string(raw)
}

// TestReplicaSetAddMemberCatchesUpFromSnapshot adds an empty member to a
// set whose log no longer holds the beginning: it must catch up from a
// snapshot of the primary's data, then from the log, while writes go on.
func TestReplicaSetAddMemberCatchesUpFromSnapshot(t *testing.T) {
	rs := startReplSet(t, 3, "--repl-retain-entries", "50")
	cl := rs.client()
	coll := cl.Database("test").Collection("c")
	ctx := ctxT(t)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	newAddr := freePort(t)
	dir := t.TempDir()
	if _, err := startMayfly(t, rs.bin, dir, newAddr, "--replSet", "rs0", "--repl-retain-entries", "50"); err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Config bson.D `bson:"config"`
	}
	admin := cl.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&conf); err != nil {
		t.Fatal(err)
	}
	next := bson.D{}
	for _, e := range conf.Config {
		switch e.Key {
		case "version":
			e.Value = e.Value.(int32) + 1
		case "members":
			e.Value = append(e.Value.(bson.A), bson.D{{Key: "_id", Value: int32(3)}, {Key: "host", Value: newAddr}})
		}
		next = append(next, e)
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: next}}).Err(); err != nil {
		t.Fatalf("replSetReconfig: %v", err)
	}
	for i := 300; i < 350; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	nc := quickClient(t, newAddr, 10*time.Second)
	ncoll := nc.Database("test").Collection("c", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := ncoll.CountDocuments(ctx, bson.D{})
		if err == nil && n == 350 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the added member holds %d documents (%v), want 350", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var idx []bson.M
	cur, err := ncoll.Indexes().List(ctx)
	if err != nil || cur.All(ctx, &idx) != nil || len(idx) != 2 {
		t.Fatalf("indexes on the added member: %v %v", idx, err)
	}
	var ss struct {
		Repl struct {
			Raft struct {
				SnapshotsInstalled int64 `bson:"snapshotsInstalled"`
			} `bson:"raft"`
		} `bson:"repl"`
	}
	if err := nc.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&ss); err != nil || ss.Repl.Raft.SnapshotsInstalled < 1 {
		t.Fatalf("the added member installed %d snapshots (%v), want it to have caught up from one", ss.Repl.Raft.SnapshotsInstalled, err)
	}
	rs.procs = append(rs.procs, &process{addr: newAddr})
	rs.addrs = append(rs.addrs, newAddr)
	rs.waitSameHash("test", 10*time.Second)
}

// TestReplicaSetWithKeyFile runs a set whose members prove the shared key
// to each other: initiated through the localhost exception, then users
// made on the primary log in on every member.
func TestReplicaSetWithKeyFile(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte("c2hhcmVkIHNldCBrZXk="), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := startReplSet(t, 3, "--keyFile", key)
	p := rs.waitPrimary(-1, 10*time.Second)
	admin := rs.direct(p).Database("admin")
	if err := admin.RunCommand(ctxT(t), bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "s3cret-pass"}, {Key: "roles", Value: bson.A{"root"}}}).Err(); err != nil {
		t.Fatalf("first user through the localhost exception: %v", err)
	}
	if code := codeOf(rawCall(t, rs.addrs[p], bson.D{{Key: "find", Value: "c"}, {Key: "$db", Value: "test"}})); code != 13 {
		t.Fatalf("find without a login: code %d, want 13", code)
	}
	cred := options.Credential{Username: "root", Password: "s3cret-pass"}
	cl := rs.client(options.Client().SetAuth(cred))
	if _, err := cl.Database("test").Collection("c").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert as root through the set: %v", err)
	}
	for i, addr := range rs.addrs {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetAuth(cred))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := c.Database("test").Collection("c", options.Collection().SetReadPreference(readpref.SecondaryPreferred())).CountDocuments(ctxT(t), bson.D{})
			if err == nil && n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: login and read as root: %d, %v", i, n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = c.Disconnect(context.Background())
	}
}

// TestReplicaSetReconfigVotesAndRemove makes a member non-voting (a raft
// learner that still replicates), then removes it: the set keeps taking
// writes, and the removed member says it is REMOVED.
func TestReplicaSetReconfigVotesAndRemove(t *testing.T) {
	rs := startReplSet(t, 3)
	admin := rs.client().Database("admin")
	ctx := ctxT(t)
	reconfig := func(edit func(members bson.A) bson.A) {
		t.Helper()
		var conf struct {
			Config bson.D `bson:"config"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&conf); err != nil {
			t.Fatal(err)
		}
		next := bson.D{}
		for _, e := range conf.Config {
			switch e.Key {
			case "version":
				e.Value = e.Value.(int32) + 1
			case "members":
				e.Value = edit(e.Value.(bson.A))
			}
			next = append(next, e)
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "replSetReconfig", Value: next}}).Err(); err != nil {
			t.Fatalf("replSetReconfig: %v", err)
		}
	}
	primary := rs.waitPrimary(-1, 10*time.Second)
	other := (primary + 1) % 3
	reconfig(func(ms bson.A) bson.A {
		for i, m := range ms {
			d := m.(bson.D)
			if h, _ := lookupD(d, "host"); h == rs.addrs[other] {
				ms[i] = bson.D{{Key: "_id", Value: int32(other)}, {Key: "host", Value: rs.addrs[other]}, {Key: "votes", Value: int32(0)}, {Key: "priority", Value: int32(0)}}
			}
		}
		return ms
	})
	coll := rs.client().Database("test").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after-votes"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h := rs.hello(other)
		if p, _ := lookupD(h, "passive"); p == true && field(t, h, "secondary") == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the non-voting member's hello: %v", h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	reconfig(func(ms bson.A) bson.A {
		out := bson.A{}
		for _, m := range ms {
			if h, _ := lookupD(m.(bson.D), "host"); h != rs.addrs[other] {
				out = append(out, m)
			}
		}
		return out
	})
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after-remove"}}); err != nil {
		t.Fatalf("write after removing a member: %v", err)
	}
	var st struct {
		Members []bson.M `bson:"members"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil || len(st.Members) != 2 {
		t.Fatalf("status after remove: %v %v", st.Members, err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		s := rawCall(t, rs.addrs[other], bson.D{{Key: "replSetGetStatus", Value: 1}, {Key: "$db", Value: "admin"}})
		if ms, _ := lookupD(s, "myState"); ms == int32(10) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed member's status: %v", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReplicaSetPriorityZeroNeverStaysPrimary initiates a set from a
// member with priority 0: raft may elect it, but it hands over at once, as
// mongod's priority takeover does.
func TestReplicaSetPriorityZeroNeverStaysPrimary(t *testing.T) {
	bin := buildBinary(t)
	var hosts []string
	for i := 0; i < 3; i++ {
		hosts = append(hosts, startReplSetMember(t, bin))
	}
	members := bson.A{}
	for i, h := range hosts {
		m := bson.D{{Key: "_id", Value: int32(i)}, {Key: "host", Value: h}}
		if i == 0 {
			m = append(m, bson.E{Key: "priority", Value: int32(0)})
		}
		members = append(members, m)
	}
	c := quickClient(t, hosts[0], 10*time.Second)
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if isPrimary(hosts[1]) || isPrimary(hosts[2]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no electable member became primary")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 20; i++ {
		if isPrimary(hosts[0]) {
			t.Fatal("the priority-0 member is primary")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
