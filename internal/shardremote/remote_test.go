package shardremote

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// lostReplyRunner finds a primary, then loses the reply of every other
// command with err.
type lostReplyRunner struct{ err error }

func (r lostReplyRunner) Run(_ context.Context, _, _ string, cmd bson.D) (bson.D, error) {
	if cmd[0].Key == "hello" {
		return bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "ok", Value: 1.0}}, nil
	}
	return nil, r.err
}

// TestLostReplyIsHostUnreachable: a migration command whose reply was
// lost stays unanswered (its outcome unknown) and answers a client with
// HostUnreachable, as mongod's does, not InternalError; a cause with a
// code of its own keeps it.
func TestLostReplyIsHostUnreachable(t *testing.T) {
	cases := []struct {
		name  string
		cause error
		want  mongoerr.Code
	}{
		{"network error", errors.New("dial tcp: connection refused"), mongoerr.HostUnreachable},
		{"cause with a code", mongoerr.New(mongoerr.AuthenticationFailed, "auth failed"), mongoerr.AuthenticationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RunOnPrimary(context.Background(), lostReplyRunner{err: tc.cause}, []string{"r:1"}, "admin",
				bson.D{{Key: "_recvChunkStatus", Value: "m1"}})
			if !IsUnanswered(err) {
				t.Fatalf("%v: not unanswered", err)
			}
			if got := mongoerr.As(err).Code; got != tc.want {
				t.Fatalf("code %v, want %v", got, tc.want)
			}
		})
	}
}
