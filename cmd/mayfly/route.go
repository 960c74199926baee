package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/commands"
	"github.com/mayflydb/mayfly/internal/logring"
	"github.com/mayflydb/mayfly/internal/router"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// routeOptions are `mayfly route`'s flags, named as mongos names them.
type routeOptions struct {
	configDB  string
	port      int
	bindIP    string
	bindIPAll bool
	keyFile   string
	logLevel  string
	logFormat string
	// cpuProfile, when set, is where the router writes a CPU profile of
	// its whole run (a debugging aid: the router has no pprof endpoint).
	cpuProfile string
	// setParameters are --setParameter name=value: enableTestCommands
	// alone, as the router's other parameters are read-only.
	setParameters setParams
}

func routeFlags(stdout io.Writer, args []string) (*flag.FlagSet, *routeOptions) {
	o := &routeOptions{setParameters: setParams{}}
	fs := subcommandFlags("route", "usage: mayfly route --configdb cfg/host:port,... [--port N] [--bind_ip IP] [--keyFile FILE]", stdout, args)
	fs.StringVar(&o.configDB, "configdb", env("MAYFLY_CONFIGDB", ""), "the config server replica set: setName/host:port,... (MAYFLY_CONFIGDB)")
	fs.IntVar(&o.port, "port", envInt("MAYFLY_PORT", 27017), "listen port (MAYFLY_PORT)")
	fs.StringVar(&o.bindIP, "bind_ip", env("MAYFLY_BIND_IP", "127.0.0.1"), "listen IP address or host name (MAYFLY_BIND_IP)")
	fs.BoolVar(&o.bindIPAll, "bind_ip_all", false, "listen on all IPv4 addresses")
	fs.StringVar(&o.keyFile, "keyFile", env("MAYFLY_KEYFILE", ""), "the cluster's shared key: the router logs in to config servers and shards with it (MAYFLY_KEYFILE)")
	fs.StringVar(&o.logLevel, "log-level", env("MAYFLY_LOG_LEVEL", "info"), "debug, info, warn or error (MAYFLY_LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", env("MAYFLY_LOG_FORMAT", "text"), "text or json (MAYFLY_LOG_FORMAT)")
	fs.Var(o.setParameters, "setParameter", "enableTestCommands=1: the router's fail points (configureFailPoint), for tests, as on mongos")
	fs.StringVar(&o.cpuProfile, "cpuprofile", env("MAYFLY_CPUPROFILE", ""), "debugging: write a CPU profile of the run to this file on shutdown (MAYFLY_CPUPROFILE)")
	return fs, o
}

// runRoute is `mayfly route`: a router in front of a sharded cluster,
// as mongos. It keeps no data; it serves until SIGINT or SIGTERM.
func runRoute(args []string, stdout io.Writer) error {
	fs, o := routeFlags(stdout, args)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.configDB == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("route: --configdb setName/host:port,... is required")
	}
	logger, err := newLogger(o.logLevel, o.logFormat, os.Stderr)
	if err != nil {
		return err
	}
	cfg, err := o.routerConfig()
	if err != nil {
		return err
	}
	ring := logring.New()
	logger = slog.New(logring.NewHandler(logger.Handler(), ring))
	cfg.Logger, cfg.Log = logger, ring
	cfg.Argv, cfg.Parsed = append([]string{"mayfly", "route"}, args...), o.parsed()
	setRouterGC(os.Getenv)
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rt, err := router.New(cfg)
	if err != nil {
		return fmt.Errorf("route: %w", err)
	}
	srv := server.New(server.Config{Addr: o.addr(), Logger: logger}, rt)
	rt.SetServerStats(srv.Stats)
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("route: %w", err)
	}
	rt.Start()
	ring.Started()
	go func() { _ = srv.Serve() }()
	logger.Info("routing", "addr", srv.Addr().String(), "configdb", o.configDB)
	return waitAndStop(srv, rt, logger)
}

// routerGCPercent is the router's garbage collection target. Its live
// heap is small (routing tables, cursors, connection buffers) and nearly
// all it allocates is one command's request and reply, dead by the next:
// at Go's default of 100 the collector runs many times a second, and the
// router spent about a fifth more CPU per routed operation than at this
// target (docs/design/0014, Measured).
const routerGCPercent = 400

// setRouterGC applies routerGCPercent unless GOGC in the environment
// chooses otherwise.
func setRouterGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(routerGCPercent)
	}
}

// startCPUProfile profiles the process into path until stop is called;
// an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// parsed is getCmdLineOpts's parsed: the settings the flags gave, as
// mongos names them (a keyFile's path, not its key).
func (o *routeOptions) parsed() bson.D {
	listen := bson.D{{Key: "bindIp", Value: o.bindIP}, {Key: "port", Value: int32(o.port)}}
	if o.bindIPAll {
		listen = bson.D{{Key: "bindIpAll", Value: true}, {Key: "port", Value: int32(o.port)}}
	}
	parsed := bson.D{{Key: "net", Value: listen}, {Key: "sharding", Value: bson.D{{Key: "configDB", Value: o.configDB}}}}
	if o.keyFile != "" {
		parsed = append(parsed, bson.E{Key: "security", Value: bson.D{{Key: "keyFile", Value: o.keyFile}}})
	}
	return parsed
}

func (o *routeOptions) addr() string {
	host := o.bindIP
	if o.bindIPAll {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(o.port))
}

// routerConfig builds the router's settings; with a keyFile it logs in
// to the cluster's members as __system, and requires its clients to log
// in as users stored on the config servers.
func (o *routeOptions) routerConfig() (router.Config, error) {
	host, _ := os.Hostname()
	if !o.bindIPAll && o.bindIP != "0.0.0.0" {
		host = o.bindIP
	}
	cfg := router.Config{ConfigDB: o.configDB, Version: commands.Version, GitVersion: "mayfly-" + commands.MayflyVersion,
		Host: net.JoinHostPort(host, strconv.Itoa(o.port))}
	for name, value := range o.setParameters {
		if name != "enableTestCommands" {
			return router.Config{}, fmt.Errorf("route: --setParameter %s: unknown or read-only parameter", name)
		}
		cfg.TestCommands = value == "1" || value == "true"
	}
	if o.keyFile != "" {
		key, err := auth.LoadKeyFile(o.keyFile)
		if err != nil {
			return router.Config{}, fmt.Errorf("route: %w", err)
		}
		cfg.Client = wireclient.Options{Credential: key.Credential()}
		cfg.RequireAuth, cfg.KeyFile = true, key
	}
	return cfg, nil
}

func waitAndStop(srv *server.Server, rt *router.Router, logger interface{ Info(string, ...any) }) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	if cerr := rt.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("route: shutdown: %w", err)
	}
	return nil
}
