package shardcmds

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCommandsRefuseWithoutRole: every internal command, on a member
// without the part it needs, refuses with mongod's code and words: the
// _configsvr* commands off a config server, the others off a shard.
func TestCommandsRefuseWithoutRole(t *testing.T) {
	for name, cmd := range Commands() {
		c := cmdargs.Call{DB: "admin", Name: name, Body: bson.D{{Key: name, Value: "test.c"}}}
		_, err := cmd.Run(context.Background(), Services{}, c)
		want := mongoerr.Newf(mongoerr.ShardingStateNotInitialized, "%s can only be run on a shard server", name)
		if strings.HasPrefix(name, "_configsvr") {
			want = mongoerr.Newf(mongoerr.IllegalOperation, "%s can only be run on config servers", name)
		}
		if err == nil || err.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}

// TestAdmitWithoutShard: a member that is not a shard lets every command
// in as it is, versions or not, and its Leave is safe to call.
func TestAdmitWithoutShard(t *testing.T) {
	ctx := context.Background()
	body := bson.D{{Key: "find", Value: "c"}, {Key: "shardVersion", Value: "not a document"}}
	adm, err := Services{}.AdmitCommand(ctx, cmdargs.Call{DB: "test", Name: "find", Body: body})
	if err != nil || adm.Filtered || adm.Ctx != ctx {
		t.Fatalf("Admit off a shard: %+v, %v; want the command as it is", adm, err)
	}
	adm.Leave()
}

// TestStaleWriteReply: a stale version on each write command answers as
// mongod's write commands do (ok, nothing written, the error on statement
// 0); on any other command, or with any other error, the error stands.
func TestStaleWriteReply(t *testing.T) {
	for _, code := range []mongoerr.Code{mongoerr.StaleConfig, mongoerr.StaleDbVersion} {
		stale := mongoerr.New(code, "stale")
		for _, tc := range []struct {
			command string
			fields  []string
		}{
			{"insert", []string{"n", "writeErrors"}},
			{"delete", []string{"n", "writeErrors"}},
			{"update", []string{"n", "nModified", "writeErrors"}},
			{"find", nil},
		} {
			reply, err := StaleWriteReply(tc.command, stale)
			if tc.fields == nil {
				if reply != nil || err != stale {
					t.Errorf("%s, %v: %v, %v; want the error", tc.command, code, reply, err)
				}
				continue
			}
			if err != nil || len(reply) != len(tc.fields) {
				t.Fatalf("%s, %v: %v, %v", tc.command, code, reply, err)
			}
			for i, f := range tc.fields {
				if reply[i].Key != f {
					t.Errorf("%s, %v: field %d is %s, want %s", tc.command, code, i, reply[i].Key, f)
				}
			}
		}
	}
	other := mongoerr.New(mongoerr.BadValue, "bad")
	if reply, err := StaleWriteReply("insert", other); reply != nil || err != other {
		t.Errorf("insert, BadValue: %v, %v; want the error", reply, err)
	}
}
