// Command sessionstore is the README's session-store pattern: web sessions
// that expire after 30 idle minutes, kept alive by each request's touch.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// idleTimeout is how long a session lives after its last request.
const idleTimeout = 30 * time.Minute

type session struct {
	Token      string    `bson:"_id"`
	User       string    `bson:"user"`
	AccessTime time.Time `bson:"accessTime"`
}

func main() {
	uri := os.Getenv("MAYFLY_URI")
	if uri == "" {
		uri = "mongodb://127.0.0.1:27017"
	}
	if err := run(context.Background(), uri); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, uri string) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = client.Disconnect(ctx) }()
	sessions := client.Database("app").Collection("sessions")

	// Once, at start: a document expires idleTimeout after its accessTime.
	ttl := mongo.IndexModel{
		Keys:    bson.D{{Key: "accessTime", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(int32(idleTimeout.Seconds())),
	}
	if _, err := sessions.Indexes().CreateOne(ctx, ttl); err != nil {
		return fmt.Errorf("create the TTL index: %w", err)
	}

	// Login: a new session.
	if _, err := sessions.InsertOne(ctx, session{Token: "t1", User: "ann", AccessTime: time.Now()}); err != nil {
		return fmt.Errorf("login: %w", err)
	}

	// Each request: find the session and touch it in one round trip. An
	// expired session is never returned, even before it is deleted.
	var s session
	touch := bson.D{{Key: "$currentDate", Value: bson.D{{Key: "accessTime", Value: true}}}}
	err = sessions.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "t1"}}, touch).Decode(&s)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return errors.New("session t1: expired or logged out")
	}
	if err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	fmt.Println("session of", s.User)

	// Logout.
	if _, err := sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: "t1"}}); err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}
