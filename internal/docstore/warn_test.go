package docstore

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestWarnExpiring: a pass sends one "expiring" event per document whose
// expiry entered the window since the last pass: a document with an
// array of dates once, by its earliest; a touched one at its new time.
func TestWarnExpiring(t *testing.T) {
	s, clk := openStore(t)
	c, _ := s.CreateCollection("db", "s", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"},
		{Key: "expireAfterSeconds", Value: 100}, {Key: "expiryWarningSeconds", Value: 10}})
	if n, err := c.WarnExpiring(clk.Now()); n != 0 || err != nil {
		t.Fatalf("first pass: %d %v", n, err)
	}
	now := clk.Now()
	for i, d := range []any{date(now), bson.A{date(now.Add(50 * time.Second)), date(now)}, date(now)} {
		if err := c.Insert(bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: d}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(89 * time.Second) // the window reaches now + 99 s: nothing due
	if n, err := c.WarnExpiring(clk.Now()); n != 0 || err != nil {
		t.Fatalf("before the window: %d %v", n, err)
	}
	_, err := c.Modify(int32(2), WriteOptions{}, func(doc bson.D) (Change, error) {
		return Change{Kind: Replace, Doc: bson.D{{Key: "_id", Value: int32(2)}, {Key: "at", Value: date(now.Add(30 * time.Second))}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // now + 101 s: 0 and 1 are due
	if n, err := c.WarnExpiring(clk.Now()); n != 2 || err != nil {
		t.Fatalf("due: %d %v", n, err)
	}
	if n, _ := c.WarnExpiring(clk.Now()); n != 0 {
		t.Fatalf("warned again: %d", n)
	}
	clk.Advance(30 * time.Second) // 2's new expiry enters the window
	if n, _ := c.WarnExpiring(clk.Now()); n != 1 {
		t.Fatalf("the touched document: %d", n)
	}
	var got []string
	err = changestream.Scan(s.Engine(), changestream.Position{}, func(rec changestream.Record) (bool, error) {
		if rec.Event.Op == changestream.OpExpiring {
			got = append(got, string(rec.Event.RawID[1:2])+"@"+time.UnixMilli(rec.Event.Expired.AtMillis).Sub(now).String())
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\x00@1m40s \x01@1m40s \x02@2m10s]"; fmt.Sprint(got) != want {
		t.Fatalf("warnings %q, want %q", fmt.Sprint(got), want)
	}
}

func TestExpiryWarningSecondsNeedsTTL(t *testing.T) {
	_, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "x"}, {Key: "expiryWarningSeconds", Value: 10}})
	if mongoerr.As(err).Code != mongoerr.CannotCreateIndex {
		t.Fatalf("without expireAfterSeconds: %v", err)
	}
	_, err = catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "x"}, {Key: "expireAfterSeconds", Value: 10}, {Key: "expiryWarningSeconds", Value: 0.5}})
	if mongoerr.As(err).Code != mongoerr.CannotCreateIndex {
		t.Fatalf("half a second: %v", err)
	}
}
