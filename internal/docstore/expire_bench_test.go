package docstore

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkExpireBatch measures TTL deletion per document: sessions with a
// token index and a TTL index, all expired, deleted in batches of 1000.
func BenchmarkExpireBatch(b *testing.B) {
	s, clk := openStoreTB(b)
	c, _ := s.CreateCollection("db", "s", CreateOptions{})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0}})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
	for i := 0; i < b.N; i++ {
		doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: fmt.Sprintf("tok%08d", i)}, {Key: "userID", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(i) * time.Microsecond))}}
		if err := c.Insert(doc, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	clk.Advance(time.Hour)
	b.ResetTimer()
	var resume []byte
	deleted := 0
	for {
		res, err := c.ExpireBatch("t_1", clk.Now(), 1000, resume)
		if err != nil {
			b.Fatal(err)
		}
		deleted += res.Deleted
		if !res.More {
			break
		}
		resume = res.Resume
	}
	if deleted != b.N {
		b.Fatalf("deleted %d of %d", deleted, b.N)
	}
}
