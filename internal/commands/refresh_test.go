package commands

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var refreshT0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// refreshHandler has test.s with a refreshOnRead index on lastSeen (1800
// s) holding documents 1..3 last seen at refreshT0, and its clock 200 s
// later: past the throttle's 180 s, so the next read of each refreshes it.
func refreshHandler(t *testing.T) (*Handler, *clock.Manual) {
	clk := clock.NewManual(refreshT0)
	h, _ := newClockedHandler(t, clk)
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "lastSeen", Value: 1}}}, {Key: "name", Value: "idle"},
		{Key: "expireAfterSeconds", Value: 1800}, {Key: "refreshOnRead", Value: true}}}}})
	docs := bson.A{}
	for i := 1; i <= 3; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "lastSeen", Value: bson.NewDateTimeFromTime(refreshT0)}})
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: docs}})
	clk.Advance(200 * time.Second)
	return h, clk
}

// refreshedIDs returns the _ids whose stored lastSeen is no longer
// refreshT0, read without refreshing (through count's filter).
func refreshedIDs(t *testing.T, h *Handler) []int32 {
	t.Helper()
	var ids []int32
	for i := int32(1); i <= 3; i++ {
		out := mustCall(t, h, "test", bson.D{{Key: "count", Value: "s"}, {Key: "query", Value: bson.D{{Key: "_id", Value: i}, {Key: "lastSeen", Value: bson.D{{Key: "$gt", Value: bson.NewDateTimeFromTime(refreshT0)}}}}}})
		if n, _ := bsonutil.Field(out, "n"); n != int32(0) && n != int64(0) {
			ids = append(ids, i)
		}
	}
	return ids
}

func TestHandlerReadsThatReturnDocumentsRefresh(t *testing.T) {
	cases := []struct {
		name string
		cmd  bson.D
		want []int32
	}{
		{"find with a projection leaving the date out", bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$lte", Value: 2}}}}}, {Key: "projection", Value: bson.D{{Key: "lastSeen", Value: 0}}}}, []int32{1, 2}},
		{"find with sort and limit refreshes only what it returns", bson.D{{Key: "find", Value: "s"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "limit", Value: 1}}, []int32{3}},
		{"aggregate with a leading $match", bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: 2}}}}}}, {Key: "cursor", Value: bson.D{}}}, []int32{2}},
		{"aggregate that counts (countDocuments)", bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}}, {Key: "cursor", Value: bson.D{}}}, nil},
		{"aggregate without a leading $match", bson.D{{Key: "aggregate", Value: "s"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: 1}}}}}}, {Key: "cursor", Value: bson.D{}}}, nil},
		{"findAndModify", bson.D{{Key: "findAndModify", Value: "s"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 3}}}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}}, []int32{3}},
		{"distinct", bson.D{{Key: "distinct", Value: "s"}, {Key: "key", Value: "_id"}}, nil},
		{"count", bson.D{{Key: "count", Value: "s"}}, nil},
		{"explain of a find", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "s"}}}, {Key: "verbosity", Value: "executionStats"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := refreshHandler(t)
			mustCall(t, h, "test", tc.cmd)
			got := refreshedIDs(t, h)
			if len(got) != len(tc.want) {
				t.Fatalf("refreshed %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("refreshed %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestHandlerFindReturnsTheRefreshedDate(t *testing.T) {
	h, clk := refreshHandler(t)
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}})
	b := firstBatch(t, out)
	got := b[0].(bson.Raw).Lookup("lastSeen").DateTime()
	if got != clk.Now().UnixMilli() {
		t.Fatalf("find returned lastSeen %v, want the refreshed %v", time.UnixMilli(got), clk.Now())
	}
	// 100 s later the date is fresh: a read writes nothing.
	clk.Advance(100 * time.Second)
	before := h.deps.Store.RefreshedOnRead()
	mustCall(t, h, "test", bson.D{{Key: "find", Value: "s"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}})
	if n := h.deps.Store.RefreshedOnRead(); n != before {
		t.Fatalf("a read within the throttle wrote (%d refreshes, was %d)", n, before)
	}
}

func TestHandlerRefreshOnReadOptionErrors(t *testing.T) {
	h, _ := refreshHandler(t)
	create := func(opts ...bson.E) error {
		spec := append(bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}}, opts...)
		_, err := call(t, h, "test", bson.D{{Key: "createIndexes", Value: "s"}, {Key: "indexes", Value: bson.A{spec}}})
		return err
	}
	wantErr(t, create(bson.E{Key: "refreshOnRead", Value: "yes"}, bson.E{Key: "expireAfterSeconds", Value: 10}), mongoerr.TypeMismatch)
	wantErr(t, create(bson.E{Key: "refreshOnRead", Value: true}), mongoerr.CannotCreateIndex)
	if err := create(bson.E{Key: "refreshOnRead", Value: false}); err != nil {
		t.Fatalf("refreshOnRead: false on a plain index: %v", err)
	}
	out := mustCall(t, h, "test", bson.D{{Key: "listIndexes", Value: "s"}})
	specs := firstBatch(t, out)
	idle, plain := specs[1].(bson.Raw), specs[2].(bson.Raw)
	if v, ok := idle.Lookup("refreshOnRead").BooleanOK(); !ok || !v {
		t.Fatalf("listIndexes: %v", idle)
	}
	if _, err := plain.LookupErr("refreshOnRead"); err == nil {
		t.Fatalf("listIndexes shows refreshOnRead: false: %v", plain)
	}
	mod := func(name string, v any) (bson.D, error) {
		return call(t, h, "test", bson.D{{Key: "collMod", Value: "s"}, {Key: "index", Value: bson.D{{Key: "name", Value: name}, {Key: "refreshOnRead", Value: v}}}})
	}
	_, err := mod("t_1", true)
	wantErr(t, err, mongoerr.InvalidOptions)
	_, err = mod("idle", int32(1))
	wantErr(t, err, mongoerr.TypeMismatch)
	reply, err := mod("idle", false)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := bsonutil.Field(reply, "refreshOnRead_old"); o != true {
		t.Fatalf("collMod reply %v", reply)
	}
	if n, _ := bsonutil.Field(reply, "refreshOnRead_new"); n != false {
		t.Fatalf("collMod reply %v", reply)
	}
	mustCall(t, h, "test", bson.D{{Key: "find", Value: "s"}})
	if got := refreshedIDs(t, h); len(got) != 0 {
		t.Fatalf("refreshOnRead turned off, a find still refreshed %v", got)
	}
}

func wantErr(t *testing.T, err error, code mongoerr.Code) {
	t.Helper()
	if e := mongoerr.As(err); err == nil || e.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
}
