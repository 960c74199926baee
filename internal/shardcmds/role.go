package shardcmds

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// RoleConfigServer is the cluster role of --configsvr.
const RoleConfigServer = "configsvr"

// configServerModeNumber is what hello reports as configsvr on a config
// server member, as mongod (kConfigServerModeNumber): routers and shards
// check it before they trust a host as a config server.
const configServerModeNumber = int32(2)

// HelloFields are the fields hello adds for a member of cluster role
// role: configsvr on a config server, nothing elsewhere.
func HelloFields(role string) bson.D {
	if role != RoleConfigServer {
		return nil
	}
	return bson.D{{Key: "configsvr", Value: configServerModeNumber}}
}

// CheckConfigServerFlag refuses a replica set config whose configsvr
// field disagrees with the member's cluster role (--configsvr), with
// mongod's code and message (ReplSetConfig::validate). A replSetInitiate
// without a config is given configsvr: true by internal/repl on a config
// server.
func CheckConfigServerFlag(role string, cfg bson.D) error {
	if cfg == nil {
		return nil
	}
	v, _ := bsonutil.Field(cfg, "configsvr")
	marked := v == true
	switch {
	case marked && role != RoleConfigServer:
		return mongoerr.New(mongoerr.BadValue, "Nodes being used for config servers must be started with the --configsvr flag")
	case !marked && role == RoleConfigServer:
		return mongoerr.New(mongoerr.BadValue, "Nodes started with the --configsvr flag must have configsvr:true in their config")
	}
	return nil
}
