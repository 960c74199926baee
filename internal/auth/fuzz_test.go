package auth

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// FuzzAuthCommands feeds arbitrary documents to the authentication and
// user commands and to Authorize: whatever a client sends, the answer is
// a reply or a MongoDB error, never a panic, and a failed conversation
// never authenticates.
func FuzzAuthCommands(f *testing.F) {
	seed := func(d bson.D) {
		raw, _ := bson.Marshal(d)
		f.Add(raw)
	}
	seed(bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: MechSHA256}, {Key: "payload", Value: bson.Binary{Data: []byte("n,,n=ann,r=abc")}}})
	seed(bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: "Yz1iaXdzLHI9YWJj"}})
	seed(bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"read", bson.D{{Key: "role", Value: "r"}, {Key: "db", Value: "d"}}}}})
	seed(bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "admin"}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"find"}}}}}, {Key: "roles", Value: bson.A{}}})
	seed(bson.D{{Key: "usersInfo", Value: bson.A{"a", bson.D{{Key: "user", Value: "b"}, {Key: "db", Value: "c"}}}}})
	seed(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: bson.D{{Key: "db", Value: 1}}}}}}}}})
	// The user's keys are derived once: key stretching on every input
	// would make each run slow enough for the fuzzer to time out.
	ann, err := NewCredentials("ann", "pw", nil, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fuzzlimit.Run(t, func() {
			var body bson.D
			if bson.Unmarshal(raw, &body) != nil || len(body) == 0 {
				return
			}
			m := newManager(t, nil)
			n := UserName{User: "ann", DB: "admin"}
			m.users[n.id()] = &User{Name: n, Roles: []RoleName{{"read", "test"}}, Credentials: ann}
			c := newConn("127.0.0.1:9")
			_ = m.Authorize(c, "admin", body[0].Key, body)
			if _, ok := handlers[body[0].Key]; ok {
				_, _ = m.Run(c, "admin", body[0].Key, body)
			}
			_ = Redact(body)
			if u, ok := sessionOf(c).User(); ok {
				t.Fatalf("authenticated as %v without a password", u)
			}
		}, raw)
	})
}
