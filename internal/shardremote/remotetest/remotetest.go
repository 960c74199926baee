// Package remotetest is a scripted stand-in for the config servers and
// shards that shardremote's callers talk to, for their tests.
package remotetest

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Scripted answers per host: a transport error for a host in Down, or
// else Replies in turn; Sent records every command that got an answer.
type Scripted struct {
	Down    map[string]bool
	Replies []bson.D
	Sent    []bson.D
}

// Run implements the runner shardremote's callers are given.
func (r *Scripted) Run(_ context.Context, host, _ string, cmd bson.D) (bson.D, error) {
	if r.Down[host] {
		return nil, errors.New("connection refused")
	}
	if len(r.Replies) == 0 {
		return nil, errors.New("remotetest: no reply scripted")
	}
	r.Sent = append(r.Sent, cmd)
	reply := r.Replies[0]
	r.Replies = r.Replies[1:]
	return reply, nil
}

// CursorReply is a cursor command's reply on config.x: batch names
// firstBatch or nextBatch, id 0 ends the cursor.
func CursorReply(id int64, batch string, docs ...any) bson.D {
	return bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: id}, {Key: "ns", Value: "config.x"},
		{Key: batch, Value: bson.A(docs)}}}, {Key: "ok", Value: 1.0}}
}
