package router

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestCursorSessionRule: every pairing of the session a cursor was opened
// in (none, A) with the one a getMore names (none, A, B), with mongos's
// code for each refusal and the sessions its message names.
func TestCursorSessionRule(t *testing.T) {
	a, b := bytes.Repeat([]byte{0xaa}, 16), bytes.Repeat([]byte{0xbb}, 16)
	const hexA, hexB = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
	cases := []struct {
		opened, getMore []byte
		code            mongoerr.Code
		msg             string
	}{
		{nil, nil, 0, ""},
		{nil, a, mongoerr.Location50799, "Cannot run getMore on cursor 9, which was not created in a session, in session " + hexA + " - "},
		{a, nil, mongoerr.Location50800, "Cannot run getMore on cursor 9, which was created in session " + hexA + " - "},
		{a, a, 0, ""},
		{a, b, mongoerr.Location50801, "Cannot run getMore on cursor 9, which was created in session " + hexA + " - "},
	}
	for _, tc := range cases {
		body := bson.D{{Key: "getMore", Value: int64(9)}}
		if tc.getMore != nil {
			body = append(body, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: tc.getMore}}}})
		}
		err := checkCursorSession(&operation{body: body}, "", &routerCursor{id: 9, session: tc.opened})
		if tc.code == 0 {
			if err != nil {
				t.Errorf("opened in %x, getMore in %x: %v", tc.opened, tc.getMore, err)
			}
			continue
		}
		me := mongoerr.As(err)
		if me.Code != tc.code || !strings.HasPrefix(me.Msg, tc.msg) {
			t.Errorf("opened in %x, getMore in %x: %v, want %d %q...", tc.opened, tc.getMore, err, tc.code, tc.msg)
		}
		if tc.code == mongoerr.Location50801 && !strings.Contains(me.Msg, ", in session "+hexB+" - ") {
			t.Errorf("50801 does not name the getMore's session: %s", me.Msg)
		}
	}
}
