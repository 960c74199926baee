package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// specDirsSharded run through `mayfly route`: every directory of the
// replica set's but the transactions' (the router refuses them, 263).
var specDirsSharded = []string{"crud", "collection-management", "index-management", "retryable-writes",
	"retryable-reads", "sessions", "change-streams", "run-command", "versioned-api", "command-logging-and-monitoring"}

// startSpecSharded starts a config server set, two shards (sets of one
// member) and two routers, adds the shards, and returns a URI naming both
// routers: the cases that ask for several mongoses use them both. The
// cases' collections are not sharded; they live on their database's
// primary shard, and every command goes through a router.
func startSpecSharded(t *testing.T) string {
	testCommands := []string{"--setParameter", "enableTestCommands=1"}
	c := &routedCluster{t: t, shards: map[string]*replSet{}}
	c.config = startNamedReplSet(t, "cfg", 1, append([]string{"--configsvr"}, testCommands...)...)
	for _, name := range shardNames() {
		c.shards[name] = startNamedReplSet(t, name, 1, append([]string{"--shardsvr"}, testCommands...)...)
	}
	second := freePort(t)
	c.router = freePort(t)
	for _, addr := range []string{c.router, second} {
		startRouterProcess(t, "cfg/"+c.config.addrs[0], addr, testCommands...)
	}
	admin := c.client().Database("admin")
	for _, name := range shardNames() {
		runCmd(t, admin, bson.D{{Key: "addShard", Value: name + "/" + c.shards[name].addrs[0]}})
	}
	return "mongodb://" + c.router + "," + second + "/"
}
