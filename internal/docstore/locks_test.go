package docstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestConcurrentWritesKeepUniqueAndIndexesExact races writers over a small
// key space: unique keys are claimed once, capped and TTL eviction run at
// the same time, and validate finds every index exact afterwards.
func TestConcurrentWritesKeepUniqueAndIndexesExact(t *testing.T) {
	c, clk := ttlColl(t, "t", 1)
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := (g*31 + i) % 50
				u := fmt.Sprintf("u%d", i%20)
				doc, _ := PrepareInsert(bson.D{{Key: "_id", Value: id}, {Key: "u", Value: u}, {Key: "k", Value: i}, {Key: "t", Value: date(clk.Now())}})
				if err := c.Insert(doc, WriteOptions{}); err != nil && mongoerr.As(err).Code != mongoerr.DuplicateKey {
					t.Errorf("insert: %v", err)
				}
				_, err := c.Modify(id, WriteOptions{}, func(d bson.D) (Change, error) {
					if d == nil {
						return Change{}, nil
					}
					return Change{Kind: Replace, Doc: append(bson.D{}, d[0], bson.E{Key: "u", Value: fmt.Sprintf("v%d-%d", g, i)}, bson.E{Key: "k", Value: -i}, d[3])}, nil
				})
				if err != nil && mongoerr.As(err).Code != mongoerr.DuplicateKey {
					t.Errorf("modify: %v", err)
				}
				if i%50 == 0 {
					if _, err := c.BeginExpiry("t_1", clk.Now().Add(2*time.Second)).Next(10); err != nil {
						t.Errorf("expire: %v", err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	res, err := c.Validate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() {
		t.Fatalf("validate after concurrent writes: %+v", res)
	}
}

// TestRetryOutlastsAPausedHolder: a holder the kernel pauses keeps a
// stripe far longer than a thousand yields take; the write waits it out
// instead of answering WriteConflict.
func TestRetryOutlastsAPausedHolder(t *testing.T) {
	released := time.Now().Add(50 * time.Millisecond)
	attempts := 0
	err := retrying(func() error {
		attempts++
		if time.Now().Before(released) {
			return errRetry
		}
		return nil
	}, "conflict")
	if err != nil {
		t.Fatalf("write gave up while the holder was paused, after %d attempts: %v", attempts, err)
	}
	if attempts > retrySpins+1000 {
		t.Errorf("%d attempts in 50 ms: the retry spins instead of backing off", attempts)
	}
}

// TestRetryGivesUpOnAStuckHolder: a stripe never released ends in
// WriteConflict once the budget is slept, and the write holds nothing
// meanwhile (once runs with its locks released each time).
func TestRetryGivesUpOnAStuckHolder(t *testing.T) {
	start := time.Now()
	err := retryingWithin(func() error { return errRetry }, "stuck", 30*time.Millisecond)
	if code := mongoerr.As(err).Code; code != mongoerr.WriteConflict {
		t.Fatalf("err = %v, want WriteConflict", err)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("gave up after %v, before its budget", took)
	}
}
