package session

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestCacheLimit(t *testing.T) {
	c := NewCache(2)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for b := byte(1); b <= 2; b++ {
		if err := c.Touch(bytes.Repeat([]byte{b}, 16), "", now); err != nil {
			t.Fatal(err)
		}
	}
	// A known session is renewed; a new one past the limit is refused.
	if err := c.Touch(bytes.Repeat([]byte{1}, 16), "", now); err != nil {
		t.Fatalf("renewing: %v", err)
	}
	if err := c.Touch(bytes.Repeat([]byte{3}, 16), "", now); !errors.Is(err, ErrFull) {
		t.Fatalf("past the limit: %v", err)
	}
	// Once the old ones expire there is room again.
	if err := c.Touch(bytes.Repeat([]byte{3}, 16), "", now.Add(Lifetime+time.Second)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

// TestCacheListsByUserAndForgetsEnded: List filters by uid, oldest use
// first, and End forgets only its user's session.
func TestCacheListsByUserAndForgetsEnded(t *testing.T) {
	c := NewCache(MaxSessions)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := bytes.Repeat([]byte{7}, 16)
	if err := c.Touch(id, "alice@admin", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch(id, "bob@admin", now); err != nil {
		t.Fatal(err)
	}
	if all := c.List(nil, now); len(all) != 2 || len(all[0]) != 3 {
		t.Fatalf("all sessions: %v, want bob's then alice's, each with its user", all)
	}
	c.End(id, "bob@admin")
	left := c.List([][]byte{UserDigest("alice@admin")}, now)
	if len(left) != 1 || left[0][2].Value != "alice@admin" {
		t.Fatalf("alice's sessions after bob's ended: %v", left)
	}
	if bob := c.List([][]byte{UserDigest("bob@admin")}, now); len(bob) != 0 {
		t.Fatalf("bob's ended session is still listed: %v", bob)
	}
}

// TestTouchKeysSessionsByUserDigest: the cache remembers users' digests,
// and forgets them past maxDigests; whichever way a touch found the
// digest, the session is keyed and listed by UserDigest of its user, so
// End finds it.
func TestTouchKeysSessionsByUserDigest(t *testing.T) {
	c := NewCache(MaxSessions)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	users := 3 * maxDigests
	id := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 8) }
	user := func(i int) string { return fmt.Sprintf("user%d@admin", i) }
	for round := range 2 { // the second round renews the first's sessions
		for i := range users {
			if err := c.Touch(id(i), user(i), now.Add(time.Duration(round)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	listed := c.List(nil, now)
	if len(listed) != users {
		t.Fatalf("%d sessions listed, want %d", len(listed), users)
	}
	for _, doc := range listed {
		key := doc[0].Value.(bson.D)
		name := doc[2].Value.(string)
		uid := key[1].Value.(bson.Binary).Data
		if !bytes.Equal(uid, UserDigest(name)) {
			t.Fatalf("session of %s has uid %x, want %x", name, uid, UserDigest(name))
		}
	}
	for i := range users {
		c.End(id(i), user(i))
	}
	if n := len(c.List(nil, now)); n != 0 {
		t.Fatalf("%d sessions left after ending them all", n)
	}
}
