package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// maxClusterTimeDrift is mongod's maxAcceptableLogicalClockDriftSecs
// default: a gossiped cluster time further ahead of this member's clock
// is refused, so that no peer can push the cluster's clock a year on.
const maxClusterTimeDrift = 365 * 24 * time.Hour

// observeClusterTime takes the $clusterTime a router or another member
// of a sharded cluster sends (the receive step of the cluster's hybrid
// logical clock): the member's next write is stamped after it, so the
// shards' stamps order every write a client saw through any router, and
// merged change streams follow that order. Only config servers and
// shards take it; a plain replica set keeps its own clock.
func (h *Handler) observeClusterTime(r *request) error {
	if h.deps.ClusterRole == "" || h.deps.Repl == nil {
		return nil
	}
	gossip, _ := bsonutil.Field(r.body, "$clusterTime")
	t, _ := bsonutil.Field(bsonutil.ToD(gossip), "clusterTime")
	ts, ok := t.(bson.Timestamp)
	if !ok || ts.IsZero() {
		return nil
	}
	wall := h.deps.Clock.Now()
	if limit := wall.Add(maxClusterTimeDrift).Unix(); int64(ts.T) > limit {
		return mongoerr.Newf(mongoerr.ClusterTimeFailsRateLimiter, "New cluster time, %d, is too far from this node's wall clock time, %d.", ts.T, wall.Unix())
	}
	h.deps.Repl.AdvanceClusterTime(changestream.Timestamp{T: ts.T, I: ts.I})
	return nil
}
