package router

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// withClusterTime is cmd with the router's cluster time as $clusterTime:
// the shards and config servers take it into their clocks (the send
// step of the cluster's hybrid logical clock), so a write stamped after
// this command comes after every write the router has seen. cmd is the
// caller's to give: a command without $clusterTime (every command the
// router builds or passes through) gets it appended in place.
func (r *Router) withClusterTime(cmd bson.D) bson.D {
	now := r.time.Now()
	if now.IsZero() {
		return cmd
	}
	for i := range cmd {
		if cmd[i].Key == "$clusterTime" {
			return bsonutil.WithField(cmd, "$clusterTime", r.clusterTimeDoc(now))
		}
	}
	return append(cmd, bson.E{Key: "$clusterTime", Value: r.clusterTimeDoc(now)})
}

// appendGossip appends what a reply carries: operationTime, the latest
// of the shards' that served the command (mongos's
// OperationTimeTracker), and $clusterTime.
func (r *Router) appendGossip(reply bson.D, opTime, clusterTime bson.Timestamp) bson.D {
	return append(reply, bson.E{Key: "operationTime", Value: opTime},
		bson.E{Key: "$clusterTime", Value: r.clusterTimeDoc(clusterTime)})
}

// clusterTimeDoc is a $clusterTime document. Its signature is the
// unsigned form the replica sets send (a zero hash under key 0) until
// signing keys exist: one document, built once and never changed, shared
// by every reply.
func (r *Router) clusterTimeDoc(t bson.Timestamp) bson.D {
	return bson.D{{Key: "clusterTime", Value: t}, {Key: "signature", Value: r.signature}}
}

// unsignedSignature is the signature clusterTimeDoc carries.
func unsignedSignature() bson.D {
	return bson.D{
		{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}},
		{Key: "keyId", Value: int64(0)},
	}
}
