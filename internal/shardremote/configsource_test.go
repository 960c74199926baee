package shardremote

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// scriptedRunner answers per host: a transport error, or replies in turn.
type scriptedRunner struct {
	down    map[string]bool
	replies []bson.D
	sent    []bson.D
}

func (r *scriptedRunner) Run(_ context.Context, host, _ string, cmd bson.D) (bson.D, error) {
	if r.down[host] {
		return nil, errors.New("connection refused")
	}
	r.sent = append(r.sent, cmd)
	reply := r.replies[0]
	r.replies = r.replies[1:]
	return reply, nil
}

func cursorReply(id int64, batch string, docs ...any) bson.D {
	return bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: id}, {Key: "ns", Value: "config.x"}, {Key: batch, Value: bson.A(docs)}}}, {Key: "ok", Value: 1.0}}
}

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
	r := &scriptedRunner{down: map[string]bool{"a:1": true}, replies: []bson.D{
		cursorReply(7, "firstBatch"),
		cursorReply(0, "nextBatch", db("db")),
	}}
	src := ConfigSource{Client: r, Hosts: []string{"a:1", "b:2"}}
	got, found, err := src.Database(ctx, "db")
	if err != nil || !found || got.Primary != "shA" {
		t.Fatalf("got %+v %v %v", got, found, err)
	}
	if len(r.sent) != 2 || r.sent[1][0].Key != "getMore" {
		t.Fatalf("sent %v, want a find then a getMore", r.sent)
	}

	r.replies = []bson.D{{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "not primary and secondaryOk=false"}, {Key: "code", Value: int32(13435)}}}
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
