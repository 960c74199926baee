package router

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

func bulkWriteCmd(ops bson.A, namespaces ...string) bson.D {
	nsInfo := bson.A{}
	for _, ns := range namespaces {
		nsInfo = append(nsInfo, bson.D{{Key: "ns", Value: ns}})
	}
	return bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: nsInfo}}
}

func retryableFields(txn int64) bson.D {
	return bson.D{{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}},
		{Key: "txnNumber", Value: txn}}
}

func insertOp(ns, id int32) bson.D {
	return bson.D{{Key: "insert", Value: ns}, {Key: "document", Value: bson.D{{Key: "_id", Value: id}}}}
}

func resultIdx(reply bson.D) []int64 {
	var out []int64
	for _, item := range bsonutil.ToA(mustField(bsonutil.ToD(mustField(reply, "cursor")), "firstBatch")) {
		out = append(out, toInt64(mustField(bsonutil.ToD(item), "idx")))
	}
	return out
}

// TestBulkWriteShardPartCarriesVersionsAndStatementIDs: ops on a sharded
// and an unsharded collection of one shard go to it as one bulkWrite
// whose nsInfo holds the namespaces in the order its ops first use them,
// each with its routing versions, the ops renumbered to it, and the
// client's statement ids; the router keeps errorsOnly and cursor.
func TestBulkWriteShardPartCarriesVersionsAndStatementIDs(t *testing.T) {
	fc := startFakeCluster(t)
	ops := bson.A{
		insertOp(1, 1),
		bson.D{{Key: "update", Value: int32(0)}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(2)}}},
			{Key: "updateMods", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(1)}}}}}},
		bson.D{{Key: "delete", Value: int32(1)}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(3)}}}},
		insertOp(0, 4),
	}
	body := append(bulkWriteCmd(ops, "db.sharded", "db.plain"), bson.E{Key: "errorsOnly", Value: false},
		bson.E{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: int32(10)}}})
	reply := fc.run("admin", append(body, retryableFields(4)...))
	if mustField(reply, "nInserted") != int32(2) || !slices.Equal(resultIdx(reply), []int64{0, 1, 2, 3}) {
		t.Fatalf("reply %v", reply)
	}
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	if len(fc.shard.bulkWrites) != 1 {
		t.Fatalf("the shard got %d bulkWrites, want 1", len(fc.shard.bulkWrites))
	}
	sent := fc.shard.bulkWrites[0]
	nsInfo := bsonutil.ToA(mustField(sent, "nsInfo"))
	plain, sharded := bsonutil.ToD(nsInfo[0]), bsonutil.ToD(nsInfo[1])
	switch {
	case len(nsInfo) != 2 || mustField(plain, "ns") != "db.plain" || mustField(sharded, "ns") != "db.sharded":
		t.Errorf("nsInfo %v", nsInfo)
	case mustField(plain, "databaseVersion") == nil || mustField(sharded, "shardVersion") == nil || mustField(sharded, "databaseVersion") != nil:
		t.Errorf("versions %v", nsInfo)
	}
	var renumbered []int64
	for _, op := range bsonutil.ToA(mustField(sent, "ops")) {
		renumbered = append(renumbered, toInt64(bsonutil.ToD(op)[0].Value))
	}
	if !slices.Equal(renumbered, []int64{0, 1, 0, 1}) {
		t.Errorf("ops' nsInfo indexes %v, want [0 1 0 1]", renumbered)
	}
	if got := compact(bsonutil.Format(mustField(sent, "stmtIds"))); got != "[0,1,2,3]" {
		t.Errorf("stmtIds %s", got)
	}
	for _, routerOnly := range []string{"errorsOnly", "cursor"} {
		if v, ok := bsonutil.Field(sent, routerOnly); ok {
			t.Errorf("the shard got %s: %v", routerOnly, v)
		}
	}
}

// TestStaleBulkWriteResendsTheRestWithTheirStatementIDs: a shard that
// stops an ordered retryable bulkWrite at op 2 with StaleConfig has
// written 0 and 1; after the refresh the router sends 2, 3 and 4 with
// their own statement ids, and the client sees five results in order.
func TestStaleBulkWriteResendsTheRestWithTheirStatementIDs(t *testing.T) {
	fc := startFakeCluster(t)
	var ops bson.A
	for i := range 5 {
		ops = append(ops, insertOp(0, int32(i)))
	}
	fc.run("db", bson.D{{Key: "count", Value: "sharded"}}) // metadata cached
	for _, s := range fc.sets {
		s.mu.Lock()
	}
	fc.shard.staleAt = 2
	for _, s := range fc.sets {
		s.mu.Unlock()
	}
	reply := fc.run("admin", append(bulkWriteCmd(ops, "db.sharded"), retryableFields(3)...))
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	if mustField(reply, "nInserted") != int32(5) || mustField(reply, "nErrors") != int32(0) || !slices.Equal(resultIdx(reply), []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("reply %v", reply)
	}
	if len(fc.shard.bulkWrites) != 2 {
		t.Fatalf("the shard got %d bulkWrites, want 2", len(fc.shard.bulkWrites))
	}
	for i, want := range []string{"[0,1,2,3,4]", "[2,3,4]"} {
		if got := compact(bsonutil.Format(mustField(fc.shard.bulkWrites[i], "stmtIds"))); got != want {
			t.Errorf("bulkWrite %d: stmtIds %s, want %s", i, got, want)
		}
	}
}

// TestBulkWriteStaleTenTimesFailsEachOp: a shard that stays stale gets
// ten tries, then each op of an unordered bulkWrite fails with
// StaleConfig, and errorsOnly still lists them.
func TestBulkWriteStaleTenTimesFailsEachOp(t *testing.T) {
	fc := startFakeCluster(t)
	fc.setStale(1000)
	body := append(bulkWriteCmd(bson.A{insertOp(0, 1), insertOp(0, 2)}, "db.sharded"),
		bson.E{Key: "ordered", Value: false}, bson.E{Key: "errorsOnly", Value: true})
	reply := fc.run("admin", body)
	versioned, _ := fc.counts("bulkWrite", shardmeta_collections)
	items := bsonutil.ToA(mustField(bsonutil.ToD(mustField(reply, "cursor")), "firstBatch"))
	if versioned != maxStaleRetries || mustField(reply, "nErrors") != int32(2) || len(items) != 2 {
		t.Fatalf("after %d tries: %v", versioned, reply)
	}
	for _, item := range items {
		if code := mustField(bsonutil.ToD(item), "code"); code != int32(13388) {
			t.Errorf("item %v, want StaleConfig", item)
		}
	}
}

// TestBulkWriteRefusals: only on admin (13), and not in a transaction,
// which the router does not route (263); nothing reaches the shard.
func TestBulkWriteRefusals(t *testing.T) {
	fc := startFakeCluster(t)
	body := bulkWriteCmd(bson.A{insertOp(0, 1)}, "db.sharded")
	txn := append(append(append(bson.D(nil), body...), retryableFields(1)...),
		bson.E{Key: "startTransaction", Value: true}, bson.E{Key: "autocommit", Value: false})
	for _, tc := range []struct {
		db   string
		body bson.D
		code int32
	}{
		{"db", body, 13},
		{"admin", txn, 263},
	} {
		if reply := fc.run(tc.db, tc.body); mustField(reply, "code") != tc.code {
			t.Errorf("on %s: %v, want code %d", tc.db, reply, tc.code)
		}
	}
	fc.sets[1].mu.Lock()
	defer fc.sets[1].mu.Unlock()
	if len(fc.shard.bulkWrites) != 0 {
		t.Errorf("the shard got %v", fc.shard.bulkWrites)
	}
}
