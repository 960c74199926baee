package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// clusterRoleFlags are mongod's --configsvr and --shardsvr.
type clusterRoleFlags struct {
	configsvr, shardsvr bool
	// fromFile is sharding.clusterRole of the config file.
	fromFile string
}

func addClusterRoleFlags(fs *flag.FlagSet) *clusterRoleFlags {
	f := &clusterRoleFlags{}
	fs.BoolVar(&f.configsvr, "configsvr", false, "run as a member of a sharded cluster's config server replica set, as mongod's --configsvr (default port 27019; needs --replSet)")
	fs.BoolVar(&f.shardsvr, "shardsvr", false, "run as a member of a shard's replica set, as mongod's --shardsvr (default port 27018; needs --replSet)")
	return f
}

// role settles the cluster role from the flags and the config file; the
// command line wins over the file, as for every other setting.
func (f *clusterRoleFlags) role() (string, error) {
	switch {
	case f.configsvr && f.shardsvr:
		return "", errors.New("BadValue: shardsvr is not allowed when configsvr is specified")
	case f.configsvr:
		return app.RoleConfigServer, nil
	case f.shardsvr:
		return app.RoleShardServer, nil
	}
	switch f.fromFile {
	case "", app.RoleConfigServer, app.RoleShardServer:
		return f.fromFile, nil
	}
	return "", fmt.Errorf("BadValue: Bad value for sharding.clusterRole: %s.  Supported modes are: (configsvr|shardsvr)", f.fromFile)
}

// defaultPort is the port a member of the role listens on when neither
// --port nor --addr says: 27019 for config servers, 27018 for shards, as
// mongod.
func defaultPort(role string) int {
	switch role {
	case app.RoleConfigServer:
		return 27019
	case app.RoleShardServer:
		return 27018
	}
	return 27017
}

// newConfigClient is a shard member's client of its config servers.
func newConfigClient(cred auth.Credential, tlsCfg *tls.Config) app.ConfigClient {
	return wireclient.New(wireclient.Options{Credential: cred, TLS: tlsCfg})
}
