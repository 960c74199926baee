package shardremote

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote/remotetest"
)

// TestConfigSourceReads: a refresh skips a config member that does not
// answer, drains the cursor with getMore, and turns failures into the
// shard's errors: a command error keeps its code, no answer from any
// member is HostUnreachable.
func TestConfigSourceReads(t *testing.T) {
	ctx := context.Background()
	uuid, err := shardmeta.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	db := func(id string) bson.Raw {
		raw, err := shardmeta.Encode(shardmeta.Database{ID: id, Primary: "shA", Version: shardmeta.DatabaseVersion{UUID: uuid, LastMod: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	r := &remotetest.Scripted{Down: map[string]bool{"a:1": true}, Replies: []bson.D{
		remotetest.CursorReply(7, "firstBatch"),
		remotetest.CursorReply(0, "nextBatch", db("db")),
	}}
	src := ConfigSource{Client: r, Hosts: []string{"a:1", "b:2"}}
	got, found, err := src.Database(ctx, "db")
	if err != nil || !found || got.Primary != "shA" {
		t.Fatalf("got %+v %v %v", got, found, err)
	}
	if len(r.Sent) != 2 || r.Sent[1][0].Key != "getMore" {
		t.Fatalf("sent %v, want a find then a getMore", r.Sent)
	}

	r.Replies = []bson.D{{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "not primary and secondaryOk=false"}, {Key: "code", Value: int32(13435)}}}
	_, _, err = src.Database(ctx, "db")
	if me := mongoerr.As(err); me.Code != 13435 {
		t.Fatalf("a config member's error: %v, want its code 13435", err)
	}

	src.Hosts = []string{"a:1"}
	_, _, err = src.Database(ctx, "db")
	if me := mongoerr.As(err); me.Code != mongoerr.HostUnreachable {
		t.Fatalf("no config member answering: %v, want HostUnreachable", err)
	}
}
