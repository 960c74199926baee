package shardmeta

import (
	"reflect"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func ts(t, i uint32) bson.Timestamp { return bson.Timestamp{T: t, I: i} }

func ptr[T any](v T) *T { return &v }

// shapes holds, for each config collection this package describes, a
// full document and the field order MongoDB 8.0 writes
// (sharding.md §2.3: type_collection.idl, type_chunk.cpp toConfigBSON,
// type_database.idl, the config.shards document printed by 8.0.5).
func shapes(t *testing.T) map[string]struct {
	doc    any
	fields []string
} {
	uuid, err := NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	oid := bson.NewObjectID()
	type shape = struct {
		doc    any
		fields []string
	}
	return map[string]shape{
		ShardsCollection: {&Shard{ID: "shA", Host: "shA/127.0.0.1:27018", State: ShardStateActive,
			TopologyTime: ts(5, 1), ReplSetConfigVersion: 1, Tags: []string{"eu"}, Draining: true},
			[]string{"_id", "host", "state", "topologyTime", "replSetConfigVersion", "tags", "draining"}},
		DatabasesCollection: {&Database{ID: "app", Primary: "shA",
			Version: DatabaseVersion{UUID: uuid, Timestamp: ts(5, 2), LastMod: 1}},
			[]string{"_id", "primary", "version"}},
		CollectionsCollection: {&Collection{ID: "app.c", Epoch: oid, Lastmod: bson.DateTime(1), Timestamp: ts(5, 3),
			UUID: uuid, Key: bson.D{{Key: "k", Value: "hashed"}}, MaxChunkSizeBytes: ptr(int64(1 << 27)),
			AllowMigrations: ptr(true)},
			[]string{"_id", "lastmodEpoch", "lastmod", "timestamp", "uuid", "key", "unique", "noBalance", "maxChunkSizeBytes", "allowMigrations"}},
		ChunksCollection: {&Chunk{ID: oid, UUID: uuid, Min: bson.D{{Key: "k", Value: bson.MinKey{}}},
			Max: bson.D{{Key: "k", Value: int64(0)}}, Shard: "shA", Lastmod: ts(1, 0), Jumbo: true,
			OnCurrentShardSince: ts(5, 3), History: []ChunkHistory{{ValidAfter: ts(5, 3), Shard: "shA"}}},
			[]string{"_id", "uuid", "min", "max", "shard", "lastmod", "jumbo", "onCurrentShardSince", "history"}},
		VersionCollection: {&ClusterVersion{ID: 1, ClusterID: oid}, []string{"_id", "clusterId"}},
		SettingsCollection: {&Balancer{ID: "balancer", Mode: "off", Stopped: true,
			ActiveWindow: &ActiveWindow{Start: "23:00", Stop: "06:00"}},
			[]string{"_id", "mode", "stopped", "activeWindow"}},
		ChangelogCollection: {&ChangelogEntry{ID: "h-2026-x", Server: "h", Shard: "config", ClientAddr: "",
			Time: bson.DateTime(2), What: "shardCollection.start", NS: "app.c", Details: bson.D{{Key: "numChunks", Value: int32(2)}}},
			[]string{"_id", "server", "shard", "clientAddr", "time", "what", "ns", "details"}},
		MongosCollection: {&Mongos{ID: "h:27017", Ping: bson.DateTime(3), Up: 10, MongoVersion: "8.0.0",
			AdvisoryHostFQDNs: []string{}},
			[]string{"_id", "ping", "up", "waiting", "mongoVersion", "advisoryHostFQDNs"}},
	}
}

// TestDocumentShapes: every config collection of ConfigCollections has a
// row; each document encodes with 8.0's fields in 8.0's order and decodes
// back to itself.
func TestDocumentShapes(t *testing.T) {
	rows := shapes(t)
	for _, name := range ConfigCollections() {
		row, ok := rows[name]
		if !ok {
			t.Errorf("config.%s has no shape row", name)
			continue
		}
		raw, err := Encode(row.doc)
		if err != nil {
			t.Fatal(err)
		}
		elems, err := raw.Elements()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range elems {
			keys = append(keys, e.Key())
		}
		if !slices.Equal(keys, row.fields) {
			t.Errorf("config.%s fields = %v, want %v", name, keys, row.fields)
		}
		back := reflect.New(reflect.TypeOf(row.doc).Elem()).Interface()
		if err := Decode(raw, back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, row.doc) {
			t.Errorf("config.%s round trip:\n got %+v\nwant %+v", name, back, row.doc)
		}
	}
	if len(rows) != len(ConfigCollections()) {
		t.Errorf("%d shape rows for %d collections", len(rows), len(ConfigCollections()))
	}
}

func TestNewUUIDIsVersion4(t *testing.T) {
	a, _ := NewUUID()
	b, _ := NewUUID()
	if a.Subtype != bson.TypeBinaryUUID || len(a.Data) != 16 || a.Data[6]>>4 != 4 || a.Data[8]>>6 != 2 {
		t.Fatalf("not a v4 UUID: %x", a.Data)
	}
	if string(a.Data) == string(b.Data) {
		t.Fatal("two UUIDs alike")
	}
}
