package app

import (
	"crypto/tls"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/shardremote"
	"github.com/mayflydb/mayfly/internal/shardstate"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// The cluster roles of Config.ClusterRole, as mongod's
// sharding.clusterRole.
const (
	RoleConfigServer = "configsvr"
	RoleShardServer  = "shardsvr"
)

// ConfigClient is how a shard member reaches its config servers: a
// wireclient.Client, which cmd/mayfly makes (Config.NewConfigClient), so
// that this package does not import the client whose tests start
// servers through it.
type ConfigClient interface {
	shardstate.Runner
	Close() error
}

// checkClusterRole refuses what mongod refuses at start: an unknown role,
// and a config server or shard that is not a replica set member.
func checkClusterRole(cfg Config) error {
	switch cfg.ClusterRole {
	case "":
		return nil
	case RoleConfigServer, RoleShardServer:
	default:
		return fmt.Errorf("BadValue: Bad value for sharding.clusterRole: %s.  Supported modes are: (configsvr|shardsvr)", cfg.ClusterRole)
	}
	if cfg.ReplSet == "" {
		return badValue(fmt.Sprintf("Cannot start a %s as a standalone server. Please use the option --replSet to start the node as a replica set.", cfg.ClusterRole))
	}
	return nil
}

// withClusterRole adds sharding.clusterRole to getCmdLineOpts' parsed
// view, as mongod shows its --configsvr and --shardsvr.
func (a *App) withClusterRole(parsed bson.D) bson.D {
	if a.cfg.ClusterRole == "" {
		return parsed
	}
	return append(parsed, bson.E{Key: "sharding", Value: bson.D{{Key: "clusterRole", Value: a.cfg.ClusterRole}}})
}

// badValue is a start-up refusal in mongod's words, which end with a
// full stop.
type badValue string

func (e badValue) Error() string { return "BadValue: " + string(e) }

// newShardState gives a shard member its cluster state: the identity
// addShard writes into admin.system.version, and a client to the config
// servers it names, logged in with the keyFile as members log in to
// each other. Nil for any other server.
func (a *App) newShardState() (*shardstate.State, error) {
	if a.cfg.ClusterRole != RoleShardServer {
		return nil, nil
	}
	client, err := a.newClusterClient()
	if err != nil {
		return nil, err
	}
	a.configClient = client
	return shardstate.New(shardstate.Options{
		LoadIdentity: a.loadShardIdentity,
		NewSource: func(id shardstate.Identity) shardstate.Source {
			return shardremote.ConfigSource{Client: a.configClient, Hosts: id.ConfigHosts()}
		},
	}), nil
}

// newClusterClient makes this member's client of the other members of
// the cluster (config servers, other shards), logged in with the keyFile
// as members log in to each other.
func (a *App) newClusterClient() (ConfigClient, error) {
	if a.cfg.NewConfigClient == nil {
		return nil, fmt.Errorf("app: a %s member needs Config.NewConfigClient to reach the cluster", a.cfg.ClusterRole)
	}
	tlsCfg, err := a.configTLS()
	if err != nil {
		return nil, err
	}
	return a.cfg.NewConfigClient(a.keyFileCredential(), tlsCfg), nil
}

func (a *App) loadShardIdentity() (bson.D, bool, error) {
	c := a.store.Collection("admin", "system.version")
	if c == nil {
		return nil, false, nil
	}
	doc, err := c.FindOne(bson.D{{Key: "_id", Value: shardstate.IdentityID}})
	return doc, doc != nil, err
}

func (a *App) keyFileCredential() auth.Credential {
	if kf := a.auth.KeyFile(); kf != nil {
		return kf.Credential()
	}
	return auth.Credential{}
}

// configTLS is the client side of TLS to the config servers, when this
// member speaks TLS to its own peers.
func (a *App) configTLS() (*tls.Config, error) {
	mode := a.cfg.Security.TLSMode
	if mode != server.TLSPrefer && mode != server.TLSRequire {
		return nil, nil
	}
	cfg, err := tlsconf.Client(a.cfg.Security.TLS, "")
	if err != nil {
		return nil, fmt.Errorf("app: TLS to the config servers: %w", err)
	}
	return cfg, nil
}

// closeConfigClient ends a shard's connections to the config servers.
func (a *App) closeConfigClient() {
	if a.configClient != nil {
		_ = a.configClient.Close()
	}
}
