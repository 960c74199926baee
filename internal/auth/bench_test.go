package auth

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkAuthorize is the per-command cost of access control for an
// authenticated user: the check every command pays before it runs.
func BenchmarkAuthorize(b *testing.B) {
	m := newManager(&testing.T{}, nil)
	addUser(&testing.T{}, m, "u", "test", "pw", RoleName{"readWrite", "test"})
	c := newConn("127.0.0.1:1")
	if err := Authenticate(context.Background(), roundTrip(m, c), Credential{User: "u", DB: "test", Password: "pw"}); err != nil {
		b.Fatal(err)
	}
	find := bson.D{{Key: "find", Value: "sessions"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Authorize(c, "test", "find", find); err != nil {
			b.Fatal(err)
		}
	}
}
