package commands

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestGetMoreSessionRules(t *testing.T) {
	h, c := newTestHandler(t)
	docs := bson.A{}
	for i := 0; i < 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
	}
	if r := runOn(h, c, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}}); replyCode(r) != 0 {
		t.Fatal(r)
	}
	session := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{7}, 16)}}}
	open := func(extra ...bson.E) int64 {
		r := runOn(h, c, "test", append(bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: int32(1)}}, extra...))
		cur, _ := bsonutil.Field(r, "cursor")
		id, _ := bsonutil.Field(cur.(bson.D), "id")
		return id.(int64)
	}
	more := func(id int64, extra ...bson.E) int32 {
		return replyCode(runOn(h, c, "test", append(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: int32(1)}}, extra...)))
	}
	inSession, outside := open(bson.E{Key: "lsid", Value: session}), open()
	if got := more(inSession); got != int32(mongoerr.Location50737) {
		t.Errorf("getMore without lsid on a session's cursor: code %d", got)
	}
	if got := more(outside, bson.E{Key: "lsid", Value: session}); got != int32(mongoerr.Location50736) {
		t.Errorf("getMore in a session on a cursor opened outside one: code %d", got)
	}
	if got := more(inSession, bson.E{Key: "lsid", Value: session}); got != 0 {
		t.Errorf("getMore in the cursor's session: code %d", got)
	}
	if got := more(outside); got != 0 {
		t.Errorf("getMore outside a session: code %d", got)
	}
}
