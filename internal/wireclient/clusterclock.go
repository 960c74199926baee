package wireclient

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// ClusterClock is the highest cluster time a router has seen in the
// replies of config servers and shards: mongos gossips it on every reply
// so that causal sessions and drivers move forward with it.
type ClusterClock struct {
	mu   sync.Mutex
	high bson.Timestamp
}

// Advance raises the clock to t if t is later.
func (c *ClusterClock) Advance(t bson.Timestamp) {
	c.mu.Lock()
	if c.high.Compare(t) < 0 {
		c.high = t
	}
	c.mu.Unlock()
}

// Now is the highest cluster time seen.
func (c *ClusterClock) Now() bson.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.high
}

// Observe takes $clusterTime.clusterTime from a config server's or a
// shard's reply.
func (c *ClusterClock) Observe(doc bson.D) {
	v, ok := bsonutil.Field(doc, "$clusterTime")
	if !ok {
		return
	}
	d, _ := v.(bson.D)
	if t, ok := bsonutil.Field(d, "clusterTime"); ok {
		if ts, ok := t.(bson.Timestamp); ok {
			c.Advance(ts)
		}
	}
}

// OperationTime returns a reply's operationTime, if it has one.
func OperationTime(reply bson.D) (bson.Timestamp, bool) {
	v, ok := bsonutil.Field(reply, "operationTime")
	ts, isTS := v.(bson.Timestamp)
	return ts, ok && isTS
}
