package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// routerCursorOpens open every kind of router cursor on app.c: merged
// from every shard, one shard's passed through, a change stream.
var routerCursorOpens = []struct {
	name string
	cmd  bson.D
}{
	{"merged from every shard", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}}},
	{"one shard's", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 3}}}, {Key: "batchSize", Value: 0}}},
	{"a change stream", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}},
		{Key: "cursor", Value: bson.D{}}}},
}

// testRouterCursorSessions: a router cursor is its session's, as on
// mongos: for every kind of router cursor, a getMore in another session
// answers 50801, one without an lsid 50800, and one in a session on a
// cursor opened outside any 50799, each naming the sessions; the cursor
// stays open for its own session. killCursors from another session
// kills it, as mongod allows outside a transaction. Commands without an
// lsid go through a raw wire client (the driver always sends one).
func testRouterCursorSessions(t *testing.T, c *routedCluster, admin *mongo.Client) {
	raw := wireclient.New(wireclient.Options{Credential: auth.Credential{User: "admin", DB: "admin", Password: "admin-pass"}})
	t.Cleanup(func() { _ = raw.Close() })
	sessions := [2]*mongo.Session{}
	for i := range sessions {
		s, err := admin.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.EndSession(context.Background()) })
		sessions[i] = s
	}
	inSession := func(i int) *sessionRunner { return &sessionRunner{t: t, db: admin.Database("app"), s: sessions[i]} }
	outside := &rawRunner{t: t, c: raw, addr: c.router}
	for _, o := range routerCursorOpens {
		id := cursorID(t, inSession(0).run(o.cmd))
		wantRefused(t, o.name+", getMore in another session", inSession(1).getMoreErr(id), 50801,
			"which was created in session "+hexUUID(sessions[0])+" - ", ", in session "+hexUUID(sessions[1])+" - ")
		wantRefused(t, o.name+", getMore without an lsid", outside.getMoreErr(id), 50800,
			"which was created in session "+hexUUID(sessions[0])+" - ", ", without an lsid")
		if err := inSession(0).getMoreErr(id); err != nil {
			t.Fatalf("%s: getMore in the cursor's session after the refusals: %v", o.name, err)
		}
		killed := inSession(1).run(bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
		if got, _ := lookupField(killed, "cursorsKilled").(bson.A); len(got) != 1 || got[0] != id {
			t.Fatalf("%s: killCursors from another session: %v", o.name, killed)
		}

		id = cursorID(t, outside.run(o.cmd))
		wantRefused(t, o.name+", getMore in a session on a cursor opened outside one", inSession(0).getMoreErr(id), 50799,
			"which was not created in a session, in session "+hexUUID(sessions[0])+" - ")
		if err := outside.getMoreErr(id); err != nil {
			t.Fatalf("%s: getMore outside a session on a cursor opened outside one: %v", o.name, err)
		}
		outside.run(bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}})
	}
}

// oneMore continues cursor id by one document, so that the merged one
// stays open; maxTimeMS bounds a change stream's wait for events
// (awaitData).
func oneMore(id int64) bson.D {
	return bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1},
		{Key: "maxTimeMS", Value: 200}}
}

func wantRefused(t *testing.T, what string, err error, code int32, msgParts ...string) {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("%s: %v, want code %d", what, err, code)
	}
	for _, part := range msgParts {
		if !strings.Contains(ce.Message, part) {
			t.Fatalf("%s: message %q lacks %q", what, ce.Message, part)
		}
	}
}

// hexUUID is a driver session's id as mongod prints it in a session id.
func hexUUID(s *mongo.Session) string {
	id, _ := lookupField(bsonD(s.ID()), "id").(bson.Binary)
	h := make([]byte, 0, 36)
	const digits = "0123456789abcdef"
	for i, b := range id.Data {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			h = append(h, '-')
		}
		h = append(h, digits[b>>4], digits[b&15])
	}
	return string(h)
}

func bsonD(raw bson.Raw) bson.D {
	var d bson.D
	_ = bson.Unmarshal(raw, &d)
	return d
}

// sessionRunner runs commands through the driver in an explicit session.
type sessionRunner struct {
	t  *testing.T
	db *mongo.Database
	s  *mongo.Session
}

func (r *sessionRunner) run(cmd bson.D) bson.D {
	r.t.Helper()
	var out bson.D
	if err := r.db.RunCommand(mongo.NewSessionContext(ctxT(r.t), r.s), cmd).Decode(&out); err != nil {
		r.t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

func (r *sessionRunner) getMoreErr(id int64) error {
	return r.db.RunCommand(mongo.NewSessionContext(ctxT(r.t), r.s), oneMore(id)).Err()
}

// rawRunner runs commands on app with no lsid at all.
type rawRunner struct {
	t    *testing.T
	c    *wireclient.Client
	addr string
}

func (r *rawRunner) run(cmd bson.D) bson.D {
	r.t.Helper()
	reply, err := r.c.Run(ctxT(r.t), r.addr, "app", cmd)
	if err == nil {
		err = wireclient.ReplyError(reply)
	}
	if err != nil {
		r.t.Fatalf("%v: %v", cmd, err)
	}
	return reply
}

// getMoreErr is the getMore's error as the driver reports one.
func (r *rawRunner) getMoreErr(id int64) error {
	reply, err := r.c.Run(ctxT(r.t), r.addr, "app", oneMore(id))
	if err != nil {
		return err
	}
	var ce *wireclient.CommandError
	if errors.As(wireclient.ReplyError(reply), &ce) {
		return mongo.CommandError{Code: ce.Code, Name: ce.CodeName, Message: ce.Msg}
	}
	return nil
}
