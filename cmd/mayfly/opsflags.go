package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/mayflydb/mayfly/internal/commands"
	"github.com/mayflydb/mayfly/internal/mongodconf"
	"github.com/mayflydb/mayfly/internal/server"
)

// errDone ends the program successfully without serving (--version).
var errDone = errors.New("done")

// opsFlags are the deployment flags: mongod's --port, --bind_ip and
// --config, --version, and the HTTP listener.
type opsFlags struct {
	port       int
	bindIP     string
	bindIPAll  bool
	configFile string
	version    bool
	// Settings read from the config file whose features other parts of
	// the server provide; see applySecurity and applyReplication.
	authorization, keyFile, replSetName string
	roles                               *clusterRoleFlags
}

func addOperationsFlags(fs *flag.FlagSet, o *options) *opsFlags {
	f := &opsFlags{roles: addClusterRoleFlags(fs)}
	fs.IntVar(&f.port, "port", 0, "listen port, as mongod's --port (default 27017; with --bind_ip, instead of --addr)")
	fs.StringVar(&f.bindIP, "bind_ip", "", "listen IP address or host name, as mongod's --bind_ip (default 127.0.0.1)")
	fs.BoolVar(&f.bindIPAll, "bind_ip_all", false, "listen on all IPv4 addresses, as mongod's --bind_ip_all")
	fs.StringVar(&f.configFile, "config", env("MAYFLY_CONFIG", ""), "mongod-style YAML configuration file (MAYFLY_CONFIG); flags win over it")
	fs.StringVar(&o.cfg.HTTPAddr, "http-addr", env("MAYFLY_HTTP_ADDR", ""), "serve Prometheus /metrics and the expiry dashboard here, e.g. 127.0.0.1:9216 (MAYFLY_HTTP_ADDR; off when empty)")
	fs.BoolVar(&o.cfg.HTTPAllowRemote, "http-allow-remote", env("MAYFLY_HTTP_ALLOW_REMOTE", "") == "true", "let --http-addr listen beyond loopback with access control off: anyone who reaches it reads database names and counts (MAYFLY_HTTP_ALLOW_REMOTE=true)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.Usage = func() { usage(fs) }
	if wantsHelp(o.args) {
		fs.SetOutput(os.Stdout) // asked for: the answer, not an error
	}
	return f
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintln(out, "Usage:")
	fmt.Fprintln(out, "  mayfly [flags]                               serve")
	fmt.Fprintln(out, "  mayfly backup --addr HOST:PORT --to DIR      back up a running server")
	fmt.Fprintln(out, "  mayfly route --configdb cfg/HOST:PORT,...    route a sharded cluster, as mongos")
	fmt.Fprintln(out, "\nFlags (each MAYFLY_* variable sets the flag's default):")
	fs.PrintDefaults()
}

// apply reads the config file and settles the listen address, once the
// command line is parsed. What the command line or the environment sets
// wins over the file.
func (f *opsFlags) apply(fs *flag.FlagSet, o *options) error {
	if f.version {
		fmt.Fprintf(fs.Output(), "mayfly v%s\ndb version v%s (MongoDB wire protocol)\n%s %s/%s\n",
			commands.MayflyVersion, commands.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return errDone
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.configFile != "" {
		if err := f.readConfig(fs, o, set); err != nil {
			return fmt.Errorf("--config %s: %w", f.configFile, err)
		}
	}
	role, err := f.roles.role()
	if err != nil {
		return err
	}
	o.cfg.ClusterRole = role
	if err := f.settleAddr(o, set); err != nil {
		return err
	}
	if err := applySecurity(f, o, set); err != nil {
		return err
	}
	return applyReplication(f, o, set)
}

// settleAddr turns --port and --bind_ip into the listen address; a
// config server or shard member without either listens on its role's
// default port unless --addr says otherwise.
func (f *opsFlags) settleAddr(o *options, set map[string]bool) error {
	rolePort := defaultPort(o.cfg.ClusterRole)
	_, addrInEnv := os.LookupEnv("MAYFLY_ADDR")
	roleDefault := rolePort != 27017 && !set["addr"] && !addrInEnv
	if f.port == 0 && f.bindIP == "" && !f.bindIPAll && !roleDefault {
		return nil
	}
	if set["addr"] {
		return errors.New("--addr and --port/--bind_ip are alternatives: give one or the other")
	}
	if f.bindIPAll {
		f.bindIP = "0.0.0.0"
	}
	if strings.Contains(f.bindIP, ",") {
		return fmt.Errorf("bind_ip %q: Mayfly listens on one address; give one (0.0.0.0 or --bind_ip_all for all)", f.bindIP)
	}
	host, port := f.bindIP, f.port
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		port = rolePort
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("port %d is out of range", port)
	}
	o.cfg.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	return nil
}

// readConfig applies the file's settings that no flag or variable set.
func (f *opsFlags) readConfig(fs *flag.FlagSet, o *options, set map[string]bool) error {
	file, err := os.Open(f.configFile)
	if err != nil {
		return err
	}
	defer file.Close()
	settings, err := mongodconf.Parse(file)
	if err != nil {
		return err
	}
	c := configApplier{fs: fs, o: o, f: f, set: set}
	for name, s := range settings {
		if err := c.apply(name, s); err != nil {
			return err
		}
	}
	return c.openLog(settings)
}

type configApplier struct {
	fs  *flag.FlagSet
	o   *options
	f   *opsFlags
	set map[string]bool
}

// flagEnv names the variable behind each flag a config setting maps to.
var flagEnv = map[string]string{
	"dbpath": "MAYFLY_DBPATH", "max-conns": "MAYFLY_MAX_CONNS", "log-level": "MAYFLY_LOG_LEVEL",
	"http-addr": "MAYFLY_HTTP_ADDR", "http-allow-remote": "MAYFLY_HTTP_ALLOW_REMOTE", "storage": "MAYFLY_STORAGE", "log-format": "MAYFLY_LOG_FORMAT",
	"tlsMode": "MAYFLY_TLS_MODE", "tlsCertificateKeyFile": "MAYFLY_TLS_CERTIFICATE_KEY_FILE", "tlsCAFile": "MAYFLY_TLS_CA_FILE",
}

// tlsSettings maps mongod's net.tls settings to the flags of the same
// meaning; the others (passwords, protocols, FIPS, invalid
// certificates allowed) are refused as unknown rather than ignored.
var tlsSettings = map[string]string{
	"net.tls.mode":                                "tlsMode",
	"net.tls.certificateKeyFile":                  "tlsCertificateKeyFile",
	"net.tls.CAFile":                              "tlsCAFile",
	"net.tls.allowConnectionsWithoutCertificates": "tlsAllowConnectionsWithoutCertificates",
}

// setFlag gives a flag the file's value unless the command line or its
// variable set it.
func (c *configApplier) setFlag(name string, s mongodconf.Setting, value string) error {
	if c.set[name] || (listenFlag(name) && c.addrGiven()) {
		return nil
	}
	if v, ok := flagEnv[name]; ok {
		if _, inEnv := os.LookupEnv(v); inEnv {
			return nil
		}
	}
	if err := c.fs.Set(name, value); err != nil {
		return fmt.Errorf("line %d: invalid value %q for --%s: %w", s.Line, value, name, err)
	}
	return nil
}

// listenFlag tells the flags --addr (or MAYFLY_ADDR) replaces.
func listenFlag(name string) bool {
	return name == "port" || name == "bind_ip" || name == "bind_ip_all"
}

func (c *configApplier) addrGiven() bool {
	_, inEnv := os.LookupEnv("MAYFLY_ADDR")
	return c.set["addr"] || inEnv
}

func (c *configApplier) apply(name string, s mongodconf.Setting) error {
	if p, ok := strings.CutPrefix(name, "setParameter."); ok {
		if _, given := c.o.cfg.SetParameters[p]; !given {
			c.o.cfg.SetParameters[p] = s.Value
		}
		return nil
	}
	if flagName, ok := tlsSettings[name]; ok {
		if name == "net.tls.mode" {
			if _, err := server.ParseTLSMode(s.Value); err != nil {
				return fmt.Errorf("line %d: invalid value %q for %s: %w", s.Line, s.Value, name, err)
			}
		}
		return c.setFlag(flagName, s, s.Value)
	}
	switch name {
	case "net.port":
		return c.setFlag("port", s, s.Value)
	case "net.bindIp":
		return c.setFlag("bind_ip", s, s.Value)
	case "net.bindIpAll":
		return c.setFlag("bind_ip_all", s, s.Value)
	case "net.maxIncomingConnections":
		return c.setFlag("max-conns", s, s.Value)
	case "storage.dbPath":
		return c.setFlag("dbpath", s, s.Value)
	case "storage.wiredTiger.engineConfig.cacheSizeGB":
		gb, err := strconv.ParseFloat(s.Value, 64)
		if err != nil || gb < 0 || math.IsNaN(gb) || gb > 1<<20 {
			return fmt.Errorf("line %d: storage.wiredTiger.engineConfig.cacheSizeGB must be a number of GB, not %q", s.Line, s.Value)
		}
		return c.setFlag("cacheSizeMB", s, strconv.FormatInt(int64(math.Ceil(gb*1024)), 10))
	case "systemLog.verbosity":
		n, err := s.Int(name)
		if err != nil {
			return err
		}
		return c.setFlag("log-level", s, map[bool]string{true: "debug", false: "info"}[n > 0])
	case "systemLog.quiet":
		quiet, err := s.Bool(name)
		if err != nil || !quiet {
			return err
		}
		return c.setFlag("log-level", s, "warn")
	case "systemLog.destination":
		if s.Value != "file" {
			return fmt.Errorf("line %d: systemLog.destination %q: Mayfly logs to standard error or, with destination: file, to systemLog.path", s.Line, s.Value)
		}
	case "systemLog.path", "systemLog.logAppend":
		// read by openLog
	case "security.authorization":
		c.f.authorization = s.Value
	case "security.keyFile":
		c.f.keyFile = s.Value
	case "replication.replSetName":
		c.f.replSetName = s.Value
	case "sharding.clusterRole":
		c.f.roles.fromFile = s.Value
	case "processManagement.timeZoneInfo":
		// Go reads the system's time zone database itself.
	case "mayfly.httpAddr":
		return c.setFlag("http-addr", s, s.Value)
	case "mayfly.httpAllowRemote":
		return c.setFlag("http-allow-remote", s, s.Value)
	case "mayfly.storage":
		return c.setFlag("storage", s, s.Value)
	case "mayfly.logFormat":
		return c.setFlag("log-format", s, s.Value)
	default:
		return fmt.Errorf("line %d: unrecognized option: %s", s.Line, name)
	}
	return nil
}

// openLog sends the log to systemLog.path when destination is file.
func (c *configApplier) openLog(settings map[string]mongodconf.Setting) error {
	dest, ok := settings["systemLog.destination"]
	path, hasPath := settings["systemLog.path"]
	if !ok {
		if hasPath {
			return fmt.Errorf("line %d: systemLog.path needs systemLog.destination: file", path.Line)
		}
		return nil
	}
	if !hasPath || path.Value == "" {
		return fmt.Errorf("line %d: systemLog.destination: file needs systemLog.path", dest.Line)
	}
	mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if s, ok := settings["systemLog.logAppend"]; ok {
		appendLog, err := s.Bool("systemLog.logAppend")
		if err != nil {
			return err
		}
		if appendLog {
			mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
	}
	out, err := os.OpenFile(path.Value, mode, 0o640)
	if err != nil {
		return fmt.Errorf("systemLog.path: %w", err)
	}
	c.o.logOut = out
	return nil
}

// applySecurity: access control is not part of this build, so a file
// that asks for it must not start a server open to everyone.
func applySecurity(f *opsFlags, o *options, set map[string]bool) error {
	switch f.authorization {
	case "", "disabled":
	case "enabled":
		if !set["auth"] {
			o.cfg.Security.Auth = true
		}
	default:
		return fmt.Errorf("security.authorization: %q: want enabled or disabled", f.authorization)
	}
	if f.keyFile != "" && !set["keyFile"] && o.cfg.Security.KeyFile == "" {
		o.cfg.Security.KeyFile = f.keyFile
	}
	return nil
}

// applyReplication takes replication.replSetName from the config file
// unless --replSet (or MAYFLY_REPLSET) named the set.
func applyReplication(f *opsFlags, o *options, set map[string]bool) error {
	if f.replSetName != "" && !set["replSet"] && o.cfg.ReplSet == "" {
		o.cfg.ReplSet = f.replSetName
	}
	return nil
}
