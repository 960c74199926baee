package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Loading goes in batches of loadBatch documents from loadParallel
// connections at once.
const (
	loadBatch    = 1000
	loadParallel = 4
)

// LoadResult reports a preload.
type LoadResult struct {
	Docs       int     `json:"docs"`
	Seconds    float64 `json:"seconds"`
	DocsPerSec float64 `json:"docs_per_sec"`
}

// inBatches calls fn for every batch [lo, hi) of [0, n) from loadParallel
// goroutines and returns the first error.
func inBatches(ctx context.Context, n int, fn func(ctx context.Context, lo, hi int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range loadParallel {
		wg.Go(func() {
			for ctx.Err() == nil {
				lo := int(next.Add(loadBatch)) - loadBatch
				if lo >= n {
					return
				}
				if err := fn(ctx, lo, min(lo+loadBatch, n)); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func runLoadJob(ctx context.Context, j Job) (*LoadResult, error) {
	start := time.Now()
	var err error
	if j.Target == targetRedis {
		err = loadRedisSessions(ctx, j.Addr, j.Count)
	} else {
		err = loadMongoSessions(ctx, j.Addr, j.Count)
	}
	if err != nil {
		return nil, err
	}
	s := time.Since(start).Seconds()
	return &LoadResult{Docs: j.Count, Seconds: s, DocsPerSec: float64(j.Count) / s}, nil
}

// createSessionIndexes makes the sessions collection's indexes: the TTL
// index on accessTime and the lookup index on token.
func createSessionIndexes(ctx context.Context, coll *mongo.Collection) error {
	_, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "accessTime", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(int32(sessionTTL / time.Second))},
		{Keys: bson.D{{Key: "token", Value: 1}}},
	})
	if err != nil {
		return fmt.Errorf("create session indexes: %w", err)
	}
	return nil
}

// loadMongoSessions creates the sessions collection's indexes and inserts
// sessions 0..n-1, all just accessed.
func loadMongoSessions(ctx context.Context, addr string, n int) error {
	c, err := dialMongo(ctx, addr, loadParallel)
	if err != nil {
		return err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	coll := c.Database(benchDB).Collection(sessionsColl)
	if err := createSessionIndexes(ctx, coll); err != nil {
		return err
	}
	now := time.Now()
	_, err = insertAll(ctx, coll, n, "sessions", func(i int) sessionDoc {
		return sessionDoc{Token: token(uint64(i)), UserID: userID(uint64(i)), AccessTime: now}
	})
	return err
}

// insertAll inserts documents 0..n-1, made by doc, in batches from
// loadParallel connections, and times it. Unordered: through a router,
// an ordered batch goes to the shards one run of consecutive same-shard
// documents at a time.
func insertAll[T any](ctx context.Context, coll *mongo.Collection, n int, what string, doc func(i int) T) (LoadResult, error) {
	start := time.Now()
	err := inBatches(ctx, n, func(ctx context.Context, lo, hi int) error {
		docs := make([]T, 0, hi-lo)
		for i := lo; i < hi; i++ {
			docs = append(docs, doc(i))
		}
		if _, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
			return fmt.Errorf("load %s %d..%d: %w", what, lo, hi, err)
		}
		return nil
	})
	if err != nil {
		return LoadResult{}, err
	}
	secs := time.Since(start).Seconds()
	return LoadResult{Docs: n, Seconds: secs, DocsPerSec: float64(n) / secs}, nil
}

// loadRedisSessions stores sessions 0..n-1 as Redis hashes with the
// session TTL, pipelined a batch at a time.
func loadRedisSessions(ctx context.Context, addr string, n int) error {
	c, err := dialRedis(ctx, addr, loadParallel)
	if err != nil {
		return err
	}
	defer c.Close()
	now := time.Now().UnixMilli()
	return inBatches(ctx, n, func(ctx context.Context, lo, hi int) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < hi; i++ {
				key := redisKey(token(uint64(i)))
				p.HSet(ctx, key, "userID", userID(uint64(i)), "accessTime", now)
				p.Expire(ctx, key, sessionTTL)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("load redis sessions %d..%d: %w", lo, hi, err)
		}
		return nil
	})
}
