package main

import (
	"os"
	"strings"
	"testing"
)

// TestClusterRoleFlags: each way to name a role (flag, config file) and
// the port a member of it listens on, with mongod's defaults and the
// refusals of a contradiction.
func TestClusterRoleFlags(t *testing.T) {
	t.Setenv("MAYFLY_ADDR", "") // the variable is restored after the test
	if err := os.Unsetenv("MAYFLY_ADDR"); err != nil {
		t.Fatal(err)
	}
	roleFile := func(role string) string {
		return writeConfig(t, "sharding:\n  clusterRole: "+role+"\nreplication:\n  replSetName: rs\n")
	}
	cases := []struct {
		name     string
		args     []string
		role     string
		addr     string
		errStart string // empty: accepted
	}{
		{"plain", nil, "", "127.0.0.1:27017", ""},
		{"configsvr", []string{"--configsvr"}, "configsvr", "127.0.0.1:27019", ""},
		{"shardsvr", []string{"--shardsvr"}, "shardsvr", "127.0.0.1:27018", ""},
		{"configsvr with --port", []string{"--configsvr", "--port", "4000"}, "configsvr", "127.0.0.1:4000", ""},
		{"shardsvr with --addr", []string{"--shardsvr", "--addr", "127.0.0.1:4001"}, "shardsvr", "127.0.0.1:4001", ""},
		{"shardsvr with --bind_ip", []string{"--shardsvr", "--bind_ip", "0.0.0.0"}, "shardsvr", "0.0.0.0:27018", ""},
		{"file configsvr", []string{"--config", roleFile("configsvr")}, "configsvr", "127.0.0.1:27019", ""},
		{"file shardsvr", []string{"--config", roleFile("shardsvr")}, "shardsvr", "127.0.0.1:27018", ""},
		{"flag wins over file", []string{"--config", roleFile("configsvr"), "--shardsvr"}, "shardsvr", "127.0.0.1:27018", ""},
		{"both flags", []string{"--configsvr", "--shardsvr"}, "", "", "BadValue: shardsvr is not allowed when configsvr is specified"},
		{"file bad role", []string{"--config", roleFile("router")}, "", "", "BadValue: Bad value for sharding.clusterRole: router.  Supported modes are: (configsvr|shardsvr)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args)
			if c.errStart != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.errStart) {
					t.Fatalf("got %v, want %q", err, c.errStart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.cfg.ClusterRole != c.role || o.cfg.Addr != c.addr {
				t.Fatalf("role %q addr %q, want %q %q", o.cfg.ClusterRole, o.cfg.Addr, c.role, c.addr)
			}
		})
	}
}
