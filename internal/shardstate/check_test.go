package shardstate

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// wantStale checks err is code with msg and exactly the extra fields
// mongod's StaleConfigInfo / StaleDbRoutingVersion serialize, in order.
func wantStale(t *testing.T, err error, code mongoerr.Code, msg string, extra bson.D) {
	t.Helper()
	me := mongoerr.As(err)
	if err == nil || me.Code != code || me.Msg != msg {
		t.Fatalf("got %v, want %s %q", err, code.Name(), msg)
	}
	got := bson.D{}
	for _, kv := range me.Extra {
		got = append(got, bson.E{Key: kv.Key, Value: kv.Value})
	}
	gotRaw, _ := bson.Marshal(got)
	wantRaw, _ := bson.Marshal(extra)
	if string(gotRaw) != string(wantRaw) {
		t.Fatalf("extra fields\n got %v\nwant %v", got, extra)
	}
}

// TestCheckShardVersion runs the shard's check over every relation a
// router's version can have with the shard's: each must pass or fail
// with mongod's reason, and the reply carries both versions and the
// shard's name.
func TestCheckShardVersion(t *testing.T) {
	const ns, shard = "db.c", "shA"
	epoch, other := bson.NewObjectID(), bson.NewObjectID()
	ts := bson.Timestamp{T: 100, I: 1}
	at := func(e bson.ObjectID, t bson.Timestamp, major, minor uint32) shardmeta.ChunkVersion {
		return shardmeta.ChunkVersion{Epoch: e, Timestamp: t, Major: major, Minor: minor}
	}
	wanted := at(epoch, ts, 2, 3)
	noChunks := at(epoch, ts, 0, 0)
	unsharded := shardmeta.Unsharded
	cases := []struct {
		name     string
		received shardmeta.ChunkVersion
		wanted   *shardmeta.ChunkVersion
		msg      string // empty: accepted
	}{
		{"equal", wanted, &wanted, ""},
		{"other minor", at(epoch, ts, 2, 0), &wanted, ""},
		{"ignored", Ignored, &wanted, ""},
		{"both unsharded", unsharded, &unsharded, ""},
		{"older major", at(epoch, ts, 1, 7), &wanted, "placement version mismatch detected for db.c"},
		{"newer major", at(epoch, ts, 3, 0), &wanted, "placement version mismatch detected for db.c"},
		{"other epoch and timestamp", at(other, bson.Timestamp{T: 200}, 2, 3), &wanted, "timestamp mismatch detected for db.c"},
		{"router unsharded, shard sharded", unsharded, &wanted, "timestamp mismatch detected for db.c"},
		{"router sharded, shard unsharded", wanted, &unsharded, "timestamp mismatch detected for db.c"},
		{"shard owns no chunk", wanted, &noChunks, "this shard no longer contains chunks for db.c, the collection may have been dropped"},
		{"router expects no chunk here", noChunks, &wanted, "this shard contains chunks for db.c, but the client expects unsharded collection"},
		{"missing metadata", wanted, nil, "sharding status of collection db.c is not currently available for filtering and needs to be recovered from the config server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckShardVersion(ns, c.received, c.wanted, shard)
			if c.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			extra := bson.D{{Key: "ns", Value: ns}, {Key: "vReceived", Value: c.received.Doc()}}
			if c.wanted != nil {
				extra = append(extra, bson.E{Key: "vWanted", Value: c.wanted.Doc()})
			}
			extra = append(extra, bson.E{Key: "shardId", Value: shard})
			wantStale(t, err, mongoerr.StaleConfig, c.msg, extra)
		})
	}
}

// TestCheckDatabaseVersion: a databaseVersion passes only when equal in
// every field to the one the database's primary shard holds.
func TestCheckDatabaseVersion(t *testing.T) {
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	otherUUID, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	wanted := shardmeta.DatabaseVersion{UUID: uuid, Timestamp: bson.Timestamp{T: 5, I: 1}, LastMod: 2}
	with := func(f func(*shardmeta.DatabaseVersion)) shardmeta.DatabaseVersion {
		v := wanted
		f(&v)
		return v
	}
	cases := []struct {
		name     string
		received shardmeta.DatabaseVersion
		wanted   *shardmeta.DatabaseVersion
		msg      string
	}{
		{"equal", wanted, &wanted, ""},
		{"older lastMod", with(func(v *shardmeta.DatabaseVersion) { v.LastMod = 1 }), &wanted, "Version mismatch for the database db"},
		{"newer lastMod", with(func(v *shardmeta.DatabaseVersion) { v.LastMod = 3 }), &wanted, "Version mismatch for the database db"},
		{"other timestamp", with(func(v *shardmeta.DatabaseVersion) { v.Timestamp = bson.Timestamp{T: 9} }), &wanted, "Version mismatch for the database db"},
		{"other uuid", with(func(v *shardmeta.DatabaseVersion) { v.UUID = otherUUID }), &wanted, "Version mismatch for the database db"},
		{"not cached", wanted, nil, "No cached info for the database db"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckDatabaseVersion("db", c.received, c.wanted)
			if c.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			extra := bson.D{{Key: "db", Value: "db"}, {Key: "vReceived", Value: databaseVersionDoc(c.received)}}
			if c.wanted != nil {
				extra = append(extra, bson.E{Key: "vWanted", Value: databaseVersionDoc(*c.wanted)})
			}
			wantStale(t, err, mongoerr.StaleDbVersion, c.msg, extra)
		})
	}
}
