package mongoerr

import (
	"errors"
	"testing"
)

// TestCausedBy: a coded error gets the prefix once, keeping its code and
// extra fields; interruptions and errors without a code stay as they are.
func TestCausedBy(t *testing.T) {
	const ctx = "Executor error during find command"
	in := &Error{Code: BadValue, Msg: "bad", Extra: []KV{{Key: "k", Value: 1}}}
	out := As(CausedBy(ctx, in))
	if out.Code != BadValue || out.Msg != ctx+" :: caused by :: bad" || len(out.Extra) != 1 {
		t.Fatalf("got %+v", out)
	}
	if again := As(CausedBy(ctx, out)); again.Msg != out.Msg {
		t.Fatalf("prefixed twice: %q", again.Msg)
	}
	for _, code := range []Code{MaxTimeMSExpired, Interrupted, CursorKilled, QueryPlanKilled} {
		e := New(code, "stop")
		if got := CausedBy(ctx, e); got != error(e) {
			t.Fatalf("code %d: %v", code, got)
		}
	}
	plain := errors.New("storage: closed")
	if got := CausedBy(ctx, plain); got != plain {
		t.Fatalf("uncoded error: %v", got)
	}
}
