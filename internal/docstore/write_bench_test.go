package docstore

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkWrite measures the write path per document on a session
// collection with a token index and a TTL index: an insert, and an update
// that touches the session (what change events cost writes shows here).
func BenchmarkWrite(b *testing.B) {
	b.Run("insert", func(b *testing.B) { benchInsert(b, true) })
	b.Run("touch", func(b *testing.B) { benchTouch(b, true, 1) })
	// A session's later touches: its entry is a touch's already.
	b.Run("retouch", func(b *testing.B) { benchTouch(b, true, 2) })
	// The change log off, as a standalone before its first stream: the
	// log's cost per write is the difference.
	b.Run("insertNoLog", func(b *testing.B) { benchInsert(b, false) })
	b.Run("touchNoLog", func(b *testing.B) { benchTouch(b, false, 1) })
}

func benchInsert(b *testing.B, logged bool) {
	c, w := benchSessions(b, logged)
	b.ResetTimer()
	w.reset()
	defer w.report(b)
	defer reportThreadCPU(b)()
	for i := 0; i < b.N; i++ {
		if err := c.Insert(benchSession(i), WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTouch times the nth touch of each of b.N sessions, the ones
// before it untimed.
func benchTouch(b *testing.B, logged bool, nth int) {
	c, w := benchSessions(b, logged)
	for i := 0; i < b.N; i++ {
		if err := c.Insert(benchSession(i), WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for round := 1; round < nth; round++ {
		touchSessions(b, c, round)
	}
	b.ResetTimer()
	w.reset()
	defer w.report(b)
	defer reportThreadCPU(b)()
	touchSessions(b, c, nth)
}

// touchSessions moves each session's date to t0 plus round seconds and
// its number of milliseconds.
func touchSessions(b *testing.B, c *Collection, round int) {
	for i := 0; i < b.N; i++ {
		at := t0.Add(time.Duration(round)*time.Second + time.Duration(i)*time.Millisecond)
		_, err := c.Modify(int64(i), WriteOptions{}, func(doc bson.D) (Change, error) {
			next := append(bson.D(nil), doc...)
			next[3].Value = date(at)
			return Change{Kind: Replace, Doc: next}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// benchSessions opens the session collection on a store that counts the
// records each write commits.
func benchSessions(b *testing.B, logged bool) (*Collection, *writeCounter) {
	s, w := openCountingStore(b, logged)
	c, _ := s.CreateCollection("db", "s", CreateOptions{})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 3600}})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
	return c, w
}

func benchSession(i int) bson.D {
	return bson.D{{Key: "_id", Value: int64(i)}, {Key: "token", Value: fmt.Sprintf("tok%08d", i)}, {Key: "userID", Value: i}, {Key: "t", Value: date(t0)}}
}
