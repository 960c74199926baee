package docstore

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

// BenchmarkExpireBatch measures TTL deletion per document: sessions with a
// token index and a TTL index, all expired, deleted in batches of 1000.
// In "inOrder" documents expire in _id order, as when they are never
// touched; in "touched" the order is a random permutation, as when the
// application touches sessions at random, so each batch reads documents
// scattered over the collection.
// In "touchedTwice" each session of "touched" was then touched twice
// (updates moving its date later): it has a touch's entry, without a
// deletion record, and the stale one the second touch left (ttlloose.go),
// so the pass reads each document and deletes two entries a document.
// In "preImages" the collection records pre-images for change streams,
// so every deletion's event carries the document.
func BenchmarkExpireBatch(b *testing.B) {
	inOrder := func(i int) int { return i }
	b.Run("inOrder", func(b *testing.B) { benchExpire(b, true, inOrder, CreateOptions{}, 0) })
	b.Run("touched", func(b *testing.B) {
		perm := rand.New(rand.NewPCG(1, 2)).Perm(b.N)
		benchExpire(b, true, func(i int) int { return perm[i] }, CreateOptions{}, 0)
	})
	b.Run("touchedTwice", func(b *testing.B) {
		perm := rand.New(rand.NewPCG(1, 2)).Perm(b.N)
		benchExpire(b, true, func(i int) int { return perm[i] }, CreateOptions{}, 2)
	})
	b.Run("preImages", func(b *testing.B) {
		benchExpire(b, true, inOrder, CreateOptions{Raw: bson.D{{Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}}, 0)
	})
	// The change log off, as a standalone before its first stream: the
	// log's cost per deletion is inOrder's time less this one's.
	b.Run("inOrderNoLog", func(b *testing.B) { benchExpire(b, false, inOrder, CreateOptions{}, 0) })
	// The resident cache off: the cache's cost per deletion is inOrder's
	// time less this one's.
	b.Run("inOrderNoCache", func(b *testing.B) {
		s, clk := openStoreCache(b, true, 0)
		benchExpireOn(b, s, clk, inOrder, CreateOptions{}, 0)
	})
}

func benchExpire(b *testing.B, logged bool, expiryRank func(int) int, opts CreateOptions, touches int) {
	s, clk := openStoreLog(b, logged)
	benchExpireOn(b, s, clk, expiryRank, opts, touches)
}

func benchExpireOn(b *testing.B, s *Store, clk *clock.Manual, expiryRank func(int) int, opts CreateOptions, touches int) {
	c, _ := s.CreateCollection("db", "s", opts)
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0}})
	mustIndexTB(b, c, bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}})
	for i := 0; i < b.N; i++ {
		doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: fmt.Sprintf("tok%08d", i)}, {Key: "userID", Value: i}, {Key: "t", Value: date(t0.Add(time.Duration(expiryRank(i)) * time.Microsecond))}}
		if err := c.Insert(doc, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		for touch := 1; touch <= touches; touch++ {
			at := date(t0.Add(time.Duration(touch)*time.Second + time.Duration(expiryRank(i))*time.Microsecond))
			if _, err := c.Modify(doc[0].Value, WriteOptions{}, setField("t", at)); err != nil {
				b.Fatal(err)
			}
		}
	}
	clk.Advance(time.Hour)
	b.ResetTimer()
	defer reportThreadCPU(b)()
	pass := c.BeginExpiry("t_1", clk.Now())
	deleted := 0
	for {
		res, err := pass.Next(1000)
		if err != nil {
			b.Fatal(err)
		}
		deleted += res.Deleted
		if !res.More {
			break
		}
	}
	if deleted != b.N {
		b.Fatalf("deleted %d of %d", deleted, b.N)
	}
}

// reportThreadCPU locks the benchmark to its thread and returns what
// reports the thread's CPU time per op (cpu-ns/op): the pass's own work,
// which the TTL monitor paces by, apart from the pebble flushes and
// compactions the setup left running, which make ns/op noisy.
func reportThreadCPU(b *testing.B) func() {
	runtime.LockOSThread()
	start, ok := benchThreadCPU()
	return func() {
		end, ok2 := benchThreadCPU()
		runtime.UnlockOSThread()
		if ok && ok2 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
