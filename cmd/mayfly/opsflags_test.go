package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mayfly.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const deployConfig = `storage:
  dbPath: /srv/mayfly
net:
  port: 27018
  bindIp: 0.0.0.0
  maxIncomingConnections: 500
systemLog:
  verbosity: 1
setParameter:
  ttlMonitorSleepSecs: 5
mayfly:
  httpAddr: 127.0.0.1:9216
  httpAllowRemote: true
processManagement:
  timeZoneInfo: /usr/share/zoneinfo
`

func TestConfigFileInMongodShape(t *testing.T) {
	o, err := parseFlags([]string{"--config", writeConfig(t, deployConfig)})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Addr != "0.0.0.0:27018" || o.cfg.DataDir != "/srv/mayfly" || o.cfg.MaxConns != 500 ||
		o.logLevel != "debug" || o.cfg.HTTPAddr != "127.0.0.1:9216" || !o.cfg.HTTPAllowRemote || o.cfg.SetParameters["ttlMonitorSleepSecs"] != "5" {
		t.Fatalf("options from the file: %+v, log level %s", o.cfg, o.logLevel)
	}
}

func TestFlagsAndVariablesWinOverTheFile(t *testing.T) {
	t.Setenv("MAYFLY_DBPATH", "/from/env")
	o, err := parseFlags([]string{"--config", writeConfig(t, deployConfig), "--port", "27100", "--setParameter", "ttlMonitorSleepSecs=9"})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.Addr != "0.0.0.0:27100" || o.cfg.DataDir != "/from/env" || o.cfg.SetParameters["ttlMonitorSleepSecs"] != "9" {
		t.Fatalf("flag and variable must win: %+v", o.cfg)
	}
}

func TestAddrWinsOverTheFilesPort(t *testing.T) {
	conf := writeConfig(t, deployConfig)
	o, err := parseFlags([]string{"--config", conf, "--addr", "127.0.0.1:4000"})
	if err != nil || o.cfg.Addr != "127.0.0.1:4000" {
		t.Fatalf("--addr over net.port: %q %v", o.cfg.Addr, err)
	}
	t.Setenv("MAYFLY_ADDR", "127.0.0.1:4001")
	o, err = parseFlags([]string{"--config", conf})
	if err != nil || o.cfg.Addr != "127.0.0.1:4001" {
		t.Fatalf("MAYFLY_ADDR over net.port: %q %v", o.cfg.Addr, err)
	}
}

func TestPortAndBindIP(t *testing.T) {
	for args, want := range map[string]string{
		"--port 27019":           "127.0.0.1:27019",
		"--bind_ip 10.0.0.5":     "10.0.0.5:27017",
		"--bind_ip ::1 --port 1": "[::1]:1",
		"--bind_ip_all":          "0.0.0.0:27017",
		"--addr 127.0.0.1:4000":  "127.0.0.1:4000",
		"":                       "127.0.0.1:27017",
	} {
		o, err := parseFlags(strings.Fields(args))
		if err != nil || o.cfg.Addr != want {
			t.Errorf("%q: addr %q %v, want %q", args, o.cfg.Addr, err, want)
		}
	}
}

func TestDeploymentErrors(t *testing.T) {
	for _, c := range []struct{ args, config, want string }{
		{"--addr 127.0.0.1:1 --port 2", "", "--addr and --port/--bind_ip are alternatives"},
		{"--bind_ip 127.0.0.1,10.0.0.1", "", "Mayfly listens on one address"},
		{"", "net:\n  prot: 1\n", "line 2: unrecognized option: net.prot"},
		{"", "net:\n  port: many\n", "line 2: invalid value"},
		{"", "security:\n  authorization: sometimes\n", "want enabled or disabled"},
		{"", "systemLog:\n  destination: syslog\n", "systemLog.destination \"syslog\""},
		{"", "systemLog:\n  destination: file\n", "needs systemLog.path"},
	} {
		args := strings.Fields(c.args)
		if c.config != "" {
			args = append(args, "--config", writeConfig(t, c.config))
		}
		_, err := parseFlags(args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: got %v, want %q", args, c.config, err, c.want)
		}
	}
}

func TestSystemLogPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mayfly.log")
	o, err := parseFlags([]string{"--config", writeConfig(t, "systemLog:\n  destination: file\n  path: "+path+"\n  logAppend: true\n")})
	if err != nil {
		t.Fatal(err)
	}
	logger, err := newLogger(o.logLevel, o.logFormat, o.logOut)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hello file")
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "hello file") {
		t.Fatalf("log file has %q", b)
	}
}

func TestShippedConfigIsValid(t *testing.T) {
	o, err := parseFlags([]string{"--config", filepath.Join("..", "..", "deploy", "mayfly.conf")})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.DataDir != "/var/lib/mayfly" || o.cfg.Addr != "127.0.0.1:27017" || o.cfg.HTTPAddr != "127.0.0.1:9216" {
		t.Fatalf("deploy/mayfly.conf: %+v", o.cfg)
	}
}

func TestConfigFileNamesTheReplicaSet(t *testing.T) {
	o, err := parseFlags([]string{"--config", writeConfig(t, "replication:\n  replSetName: rs0\n")})
	if err != nil || o.cfg.ReplSet != "rs0" {
		t.Fatalf("replication.replSetName: %q, %v", o.cfg.ReplSet, err)
	}
	o, err = parseFlags([]string{"--replSet", "other", "--config", writeConfig(t, "replication:\n  replSetName: rs0\n")})
	if err != nil || o.cfg.ReplSet != "other" {
		t.Fatalf("--replSet over the file: %q, %v", o.cfg.ReplSet, err)
	}
}

func TestConfigFileTurnsOnAccessControl(t *testing.T) {
	o, err := parseFlags([]string{"--config", writeConfig(t, "security:\n  authorization: enabled\n  keyFile: /etc/mayfly/key\n")})
	if err != nil || !o.cfg.Security.Auth || o.cfg.Security.KeyFile != "/etc/mayfly/key" {
		t.Fatalf("security section: %+v, %v", o.cfg.Security, err)
	}
}

// TestConfigFileTurnsOnTLS: net.tls in mongod's shape sets the TLS
// flags, which win over it, and an option of net.tls Mayfly does not
// have stops the start instead of being ignored.
func TestConfigFileTurnsOnTLS(t *testing.T) {
	const tlsConfig = `net:
  tls:
    mode: requireTLS
    certificateKeyFile: /etc/ssl/mayfly.pem
    CAFile: /etc/ssl/ca.pem
    allowConnectionsWithoutCertificates: true
`
	o, err := parseFlags([]string{"--config", writeConfig(t, tlsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	sec := o.cfg.Security
	if sec.TLSMode != server.TLSRequire || sec.TLS.CertificateKeyFile != "/etc/ssl/mayfly.pem" ||
		sec.TLS.CAFile != "/etc/ssl/ca.pem" || !sec.TLS.AllowConnectionsWithoutCertificates {
		t.Fatalf("net.tls: %+v", sec)
	}
	t.Setenv("MAYFLY_TLS_CA_FILE", "/env/ca.pem")
	o, err = parseFlags([]string{"--config", writeConfig(t, tlsConfig), "--tlsMode", "preferTLS"})
	if err != nil || o.cfg.Security.TLSMode != server.TLSPrefer || o.cfg.Security.TLS.CAFile != "/env/ca.pem" {
		t.Fatalf("flag and variable over the file: %+v, %v", o.cfg.Security, err)
	}
	for conf, want := range map[string]string{
		"net:\n  tls:\n    mode: sometimes\n":                        "line 3: invalid value \"sometimes\"",
		"net:\n  tls:\n    allowInvalidCertificates: true\n":         "line 3: unrecognized option: net.tls.allowInvalidCertificates",
		"net:\n  tls:\n    certificateKeyFilePassword: secret\n":     "unrecognized option: net.tls.certificateKeyFilePassword",
		"net:\n  tls:\n    allowConnectionsWithoutCertificates: 2\n": "line 3: invalid value \"2\"",
	} {
		if _, err := parseFlags([]string{"--config", writeConfig(t, conf)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", conf, err, want)
		}
	}
}

func TestCacheSize(t *testing.T) {
	fromFile := writeConfig(t, "storage:\n  wiredTiger:\n    engineConfig:\n      cacheSizeGB: 0.25\n")
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{nil, rescache.DefaultBytes},
		{[]string{"--cacheSizeMB", "100"}, 100 << 20},
		{[]string{"--cacheSizeMB", "0"}, -1},
		{[]string{"--config", fromFile}, 256 << 20},
		{[]string{"--config", fromFile, "--cacheSizeMB", "8"}, 8 << 20},
	} {
		o, err := parseFlags(tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.cfg.ResidentCacheBytes != tc.want {
			t.Errorf("%v: cache %d bytes, want %d", tc.args, o.cfg.ResidentCacheBytes, tc.want)
		}
	}
	for _, bad := range [][]string{{"--cacheSizeMB", "-1"}, {"--config", writeConfig(t, "storage:\n  wiredTiger:\n    engineConfig:\n      cacheSizeGB: lots\n")}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
