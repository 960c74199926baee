package shardstate

import (
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// IdentityID is the _id of the document in admin.system.version that
// makes a --shardsvr member a shard, as mongod's
// ShardIdentityType::IdName.
const IdentityID = "shardIdentity"

// Identity is the shardIdentity document: the shard's name in
// config.shards, the cluster's id (config.version's clusterId) and where
// the config servers are ("setName/host:port,host:port").
type Identity struct {
	ShardName                 string        `bson:"shardName"`
	ClusterID                 bson.ObjectID `bson:"clusterId"`
	ConfigsvrConnectionString string        `bson:"configsvrConnectionString"`
}

// ErrBadIdentity reports a shardIdentity document without the fields a
// shard needs.
var ErrBadIdentity = errors.New("shardstate: invalid shardIdentity document")

// ParseIdentity reads a shardIdentity document.
func ParseIdentity(doc bson.D) (Identity, error) {
	raw, err := bson.Marshal(doc)
	if err != nil {
		return Identity{}, fmt.Errorf("shardstate: encode shardIdentity: %w", err)
	}
	var id Identity
	if err := bson.Unmarshal(raw, &id); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrBadIdentity, err)
	}
	if id.ShardName == "" || len(id.ConfigHosts()) == 0 {
		return Identity{}, fmt.Errorf("%w: shardName and configsvrConnectionString (set/host:port,...) are required", ErrBadIdentity)
	}
	return id, nil
}

// ConfigHosts are the config server members named by the connection
// string, in its order.
func (id Identity) ConfigHosts() []string {
	_, list, ok := strings.Cut(id.ConfigsvrConnectionString, "/")
	if !ok || list == "" {
		return nil
	}
	return strings.Split(list, ",")
}
