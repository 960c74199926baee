package commands

import (
	"bytes"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/session"
)

func lsid(b byte) bson.D {
	return bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: bytes.Repeat([]byte{b}, 16)}}}
}

// listSessions runs {aggregate: 1, pipeline: [{$listLocalSessions: spec}]}.
func listSessions(t *testing.T, h *Handler, conn *server.Conn, spec any) []bson.D {
	t.Helper()
	out := runOn(h, conn, "test", bson.D{{Key: "aggregate", Value: int32(1)},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: spec}}}}, {Key: "cursor", Value: bson.D{}}})
	if ok, _ := bsonutil.Field(out, "ok"); ok != 1.0 {
		t.Fatalf("$listLocalSessions: %v", out)
	}
	var docs []bson.D
	for _, x := range firstBatch(t, out) {
		docs = append(docs, rawDoc(t, x))
	}
	return docs
}

func TestListLocalSessions(t *testing.T) {
	h, conn := newTestHandler(t)
	manual := clock.NewManual(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h.deps.Clock, h.steady = manual, manual
	runOn(h, conn, "test", bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid(1)}})
	manual.Advance(time.Second)
	runOn(h, conn, "test", bson.D{{Key: "count", Value: "c"}, {Key: "lsid", Value: lsid(2)}})
	got := listSessions(t, h, conn, bson.D{})
	if len(got) != 2 {
		t.Fatalf("sessions %v", got)
	}
	id := doc(t, got[0], "_id")
	if v, _ := bsonutil.Field(id, "id"); !bytes.Equal(v.(bson.Binary).Data, bytes.Repeat([]byte{1}, 16)) {
		t.Fatalf("first session %v", got[0])
	}
	// Without authentication uid is the digest of no user, and no user is named.
	if v, _ := bsonutil.Field(id, "uid"); !bytes.Equal(v.(bson.Binary).Data, session.UserDigest("")) {
		t.Fatalf("uid %v", id)
	}
	if _, ok := bsonutil.Field(got[0], "user"); ok {
		t.Fatalf("user without authentication: %v", got[0])
	}
	if v, _ := bsonutil.Field(got[1], "lastUse"); v.(bson.DateTime).Time().Sub(manual.Now()) != 0 {
		t.Fatalf("lastUse %v", got[1])
	}
	if n := len(listSessions(t, h, conn, bson.D{{Key: "allUsers", Value: true}})); n != 2 {
		t.Fatalf("allUsers: %d", n)
	}
	runOn(h, conn, "admin", bson.D{{Key: "endSessions", Value: bson.A{lsid(1)}}})
	if got := listSessions(t, h, conn, bson.D{}); len(got) != 1 {
		t.Fatalf("after endSessions: %v", got)
	}
	// Later stages run over the sessions; unused sessions expire.
	manual.Advance(31 * time.Minute)
	if got := listSessions(t, h, conn, bson.D{}); len(got) != 0 {
		t.Fatalf("after the timeout: %v", got)
	}
}

func TestListLocalSessionsErrors(t *testing.T) {
	h, _ := newTestHandler(t)
	seedHandler(t, h)
	stage := func(spec any) bson.D { return bson.D{{Key: "$listLocalSessions", Value: spec}} }
	cases := []struct {
		name string
		cmd  bson.D
		code mongoerr.Code
	}{
		{"unknown field", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{stage(bson.D{{Key: "x", Value: 1}})}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.Location40415},
		{"not an object", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{stage(1)}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.TypeMismatch},
		{"allUsers and users", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{stage(bson.D{{Key: "allUsers", Value: true},
			{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "u"}, {Key: "db", Value: "admin"}}}}})}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.UnsupportedFormat},
		{"on a collection", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{stage(bson.D{})}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.InvalidNamespace},
		{"not first", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, stage(bson.D{})}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.Location40602},
	}
	for _, tc := range cases {
		_, err := call(t, h, "test", tc.cmd)
		if e := mongoerr.As(err); e == nil || e.Code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
}

// TestFullSessionCacheAnswers261: a command naming a new session past the
// cache's limit, and a refreshSessions of one, fail as mongod's do, while
// a known session still runs.
func TestFullSessionCacheAnswers261(t *testing.T) {
	h, conn := newTestHandler(t)
	h.sessions = session.NewCache(1)
	if out := runOn(h, conn, "test", bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid(1)}}); !replyOK(out) {
		t.Fatalf("first session: %v", out)
	}
	want := "Unable to add session ID 02020202-0202-0202-0202-020202020202 into the cache because the number of active sessions is too high"
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid(2)}},
		{{Key: "refreshSessions", Value: bson.A{lsid(2)}}},
	} {
		out := runOn(h, conn, "admin", cmd)
		if code, _ := bsonutil.Field(out, "code"); code != int32(mongoerr.TooManyLogicalSessions) {
			t.Fatalf("%s past the limit: %v", cmd[0].Key, out)
		}
		if msg, _ := bsonutil.Field(out, "errmsg"); msg != want {
			t.Fatalf("%s: errmsg %q, want %q", cmd[0].Key, msg, want)
		}
	}
	if out := runOn(h, conn, "test", bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid(1)}}); !replyOK(out) {
		t.Fatalf("the known session: %v", out)
	}
}

func replyOK(reply bson.D) bool {
	ok, _ := bsonutil.Field(reply, "ok")
	return ok == 1.0
}
