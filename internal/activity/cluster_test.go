package activity

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestShardOp(t *testing.T) {
	got := ShardOp(bson.D{{Key: "type", Value: "op"}, {Key: "client", Value: "127.0.0.1:5"}, {Key: "opid", Value: int32(42)}}, "shA")
	want := bson.D{{Key: "shard", Value: "shA"}, {Key: "type", Value: "op"}, {Key: "client_s", Value: "127.0.0.1:5"}, {Key: "opid", Value: "shA:42"}}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}

func TestParseShardOpID(t *testing.T) {
	if shard, opid, err := ParseShardOpID("shA:42"); shard != "shA" || opid != 42 || err != nil {
		t.Fatalf("shA:42: %q %d %v", shard, opid, err)
	}
	for s, code := range map[string]mongoerr.Code{
		"": mongoerr.Location28625, "shA": mongoerr.Location28625, ":1": mongoerr.Location28625, "shA:": mongoerr.Location28625,
		"shA:x": mongoerr.FailedToParse, "shA:99999999999": mongoerr.FailedToParse,
	} {
		if _, _, err := ParseShardOpID(s); mongoerr.As(err).Code != code {
			t.Errorf("%q: %v, want code %d", s, err, code)
		}
	}
}

func TestDocNamesTheNamespaceFromDB(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want string
	}{
		{Op{DB: "app", Command: bson.D{{Key: "find", Value: "sessions"}}}, "app.sessions"},
		{Op{DB: "admin", Command: bson.D{{Key: "ping", Value: int32(1)}}}, "admin.$cmd"},
		{Op{NS: "app.x", DB: "other", Command: bson.D{{Key: "find", Value: "y"}}}, "app.x"},
	} {
		doc := tc.op.Doc(time.Now(), "localhost")
		for _, e := range doc {
			if e.Key == "ns" && e.Value != tc.want {
				t.Errorf("%v: ns %v, want %s", tc.op.Command, e.Value, tc.want)
			}
		}
	}
}
