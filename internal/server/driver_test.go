// Tests that talk to the server with the official Go driver, which is what
// the wire details are ultimately for.

package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

func connectDriver(t *testing.T, s *Server, query string) *mongo.Client {
	t.Helper()
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&serverSelectionTimeoutMS=5000%s", s.Addr(), query)
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Disconnect(ctx)
	})
	return client
}

func TestDriverHandshakeAndCommands(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	client := connectDriver(t, s, "&appName=mayfly-test")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var res bson.D
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Decode(&res); err != nil {
		t.Fatalf("ping: %v", err)
	}
	// The driver's first message is the legacy OP_QUERY handshake.
	first := h.commands()[0]
	if !first.Legacy || first.Name != "isMaster" || first.DB != "admin" {
		t.Fatalf("first command %+v", first)
	}
	pings := h.named("ping")
	if len(pings) != 1 || pings[0].Legacy || pings[0].DB != "admin" || pings[0].Compressor != "" {
		t.Fatalf("pings %+v", pings)
	}
	// A multi-document insert arrives with its documents merged from a
	// kind-1 section.
	docs := []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}
	if _, err := client.Database("test").Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
	ins := h.named("insert")
	if len(ins) != 1 || ins[0].DB != "test" || len(field(ins[0].Body, "documents").(bson.A)) != 2 {
		t.Fatalf("insert %+v", ins)
	}
}

// w:0 writes go out with moreToCome: the server runs them and stays silent.
func TestDriverUnacknowledgedWrite(t *testing.T) {
	h := newFakeHandler()
	s := startServer(t, Config{}, h)
	client := connectDriver(t, s, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("w:0 insert: %v", err)
	}
	// The connection must still be in step: a normal command works.
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatalf("ping after w:0 insert: %v", err)
	}
	eventually(t, "the w:0 insert to reach the handler", func() bool { return len(h.named("insert")) == 1 })
	if ins := h.named("insert")[0]; !ins.MoreToCome {
		t.Fatalf("insert %+v not marked moreToCome", ins)
	}
}

func TestDriverCompression(t *testing.T) {
	for _, name := range []string{"snappy", "zlib", "zstd"} {
		t.Run(name, func(t *testing.T) {
			h := newFakeHandler()
			s := startServer(t, Config{}, h)
			client := connectDriver(t, s, "&compressors="+name)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range 3 {
				if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
					t.Fatalf("ping: %v", err)
				}
			}
			if _, err := client.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
				t.Fatalf("insert: %v", err)
			}
			for _, cmd := range append(h.named("ping"), h.named("insert")...) {
				if cmd.Compressor != name {
					t.Fatalf("%s arrived compressed with %q, want %s", cmd.Name, cmd.Compressor, name)
				}
			}
		})
	}
}

func TestDriverHandlerErrors(t *testing.T) {
	s := startServer(t, Config{}, newFakeHandler())
	client := connectDriver(t, s, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "panic", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 1 {
		t.Fatalf("panic command: %v", err)
	}
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatalf("ping after a panicking command: %v", err)
	}
}
