package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// sessionDoc is a session as the application stores it in Mayfly.
type sessionDoc struct {
	Token      string    `bson:"token"`
	UserID     int64     `bson:"userID"`
	AccessTime time.Time `bson:"accessTime"`
}

// dialMongo connects the official Go driver to addr (Mayfly or the null
// server) with at most pool connections, and pings it.
// dialJob connects to a job's server: its replica set's seed list when it
// has one, else its address.
func dialJob(ctx context.Context, j Job) (*mongo.Client, error) {
	if j.URI == "" {
		return dialMongo(ctx, j.Addr, j.Clients)
	}
	c, err := mongo.Connect(options.Client().ApplyURI(j.URI).SetMaxPoolSize(uint64(max(j.Clients, 1))).SetAppName("mayfly-bench"))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", j.URI, err)
	}
	if err := c.Ping(ctx, nil); err != nil {
		_ = c.Disconnect(ctx)
		return nil, fmt.Errorf("ping %s: %w", j.URI, err)
	}
	return c, nil
}

func dialMongo(ctx context.Context, addr string, pool int) (*mongo.Client, error) {
	opts := options.Client().
		ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetMaxPoolSize(uint64(max(pool, 1))).
		SetAppName("mayfly-bench")
	c, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	if err := c.Ping(ctx, nil); err != nil {
		_ = c.Disconnect(ctx)
		return nil, fmt.Errorf("ping %s: %w", addr, err)
	}
	return c, nil
}

// mongoStore runs the session operations through the Go driver.
type mongoStore struct {
	client *mongo.Client
	coll   *mongo.Collection
	// unchanged counts touches that matched but changed nothing (the
	// same accessTime, to the millisecond): they make no change event.
	unchanged atomic.Int64
}

func newMongoStore(ctx context.Context, addr string, pool int) (*mongoStore, error) {
	c, err := dialMongo(ctx, addr, pool)
	if err != nil {
		return nil, err
	}
	return &mongoStore{client: c, coll: c.Database(benchDB).Collection(sessionsColl)}, nil
}

func (s *mongoStore) touch(ctx context.Context, tok string, now time.Time) (bool, error) {
	res, err := s.coll.UpdateOne(ctx,
		bson.D{{Key: "token", Value: tok}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: now}}}})
	if err != nil {
		return false, fmt.Errorf("touch: %w", err)
	}
	if res.MatchedCount > 0 && res.ModifiedCount == 0 {
		s.unchanged.Add(1)
	}
	return res.MatchedCount > 0, nil
}

func (s *mongoStore) verify(ctx context.Context, tok string) (bool, error) {
	var doc sessionDoc
	err := s.coll.FindOne(ctx, bson.D{{Key: "token", Value: tok}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("verify: %w", err)
	}
	return true, nil
}

func (s *mongoStore) login(ctx context.Context, tok string, user int64, now time.Time) error {
	if _, err := s.coll.InsertOne(ctx, sessionDoc{Token: tok, UserID: user, AccessTime: now}); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	return nil
}

func (s *mongoStore) logout(ctx context.Context, tok string) (bool, error) {
	res, err := s.coll.DeleteOne(ctx, bson.D{{Key: "token", Value: tok}})
	if err != nil {
		return false, fmt.Errorf("logout: %w", err)
	}
	return res.DeletedCount > 0, nil
}

func (s *mongoStore) close(ctx context.Context) error { return s.client.Disconnect(ctx) }
