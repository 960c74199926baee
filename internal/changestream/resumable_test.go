package changestream

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestResumableErrorLabel: the errors a driver may resume after carry
// ResumableChangeStreamError, others not, and the label keeps the
// error's own fields.
func TestResumableErrorLabel(t *testing.T) {
	labels := func(err error) any {
		for _, kv := range mongoerr.As(err).Extra {
			if kv.Key == "errorLabels" {
				return kv.Value
			}
		}
		return nil
	}
	for _, code := range []mongoerr.Code{mongoerr.NotWritablePrimary, mongoerr.HostUnreachable, mongoerr.RetryChangeStream, mongoerr.StaleConfig} {
		in := &mongoerr.Error{Code: code, Msg: "x", Extra: []mongoerr.KV{{Key: "k", Value: int32(1)}}}
		out := mongoerr.As(ResumableError(in))
		if l, ok := labels(out).(bson.A); !ok || len(l) != 1 || l[0] != "ResumableChangeStreamError" {
			t.Fatalf("code %d labels %v", code, labels(out))
		}
		if len(out.Extra) != 2 || len(in.Extra) != 1 {
			t.Fatalf("code %d: extra %v, the original's %v", code, out.Extra, in.Extra)
		}
	}
	for _, code := range []mongoerr.Code{mongoerr.ChangeStreamHistoryLost, mongoerr.ChangeStreamFatalError, mongoerr.Interrupted} {
		if l := labels(ResumableError(mongoerr.New(code, "x"))); l != nil {
			t.Fatalf("code %d labelled %v", code, l)
		}
	}
}
