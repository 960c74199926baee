package app

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// Security is mongod's security and net.tls settings.
type Security struct {
	// Auth turns access control on (--auth).
	Auth bool
	// KeyFile is the replica set's shared key (--keyFile); it implies Auth.
	KeyFile string
	TLSMode server.TLSMode
	TLS     tlsconf.Options
}

// security loads users and roles, the keyFile and the TLS certificates.
func (a *App) security(store *docstore.Store) (*auth.Manager, *tls.Config, error) {
	sec := a.cfg.Security
	var kf *auth.KeyFile
	if sec.KeyFile != "" {
		var err error
		if kf, err = auth.LoadKeyFile(sec.KeyFile); err != nil {
			return nil, nil, fmt.Errorf("app: keyFile: %w", err)
		}
	}
	m, err := auth.NewManager(store, auth.Config{Enabled: sec.Auth || kf != nil, KeyFile: kf, Logger: a.cfg.Logger})
	if err != nil {
		return nil, nil, fmt.Errorf("app: %w", err)
	}
	a.auth = m
	if sec.TLSMode == server.TLSDisabled {
		return m, nil, nil
	}
	cfg, err := tlsconf.Server(sec.TLS)
	if err != nil {
		return nil, nil, fmt.Errorf("app: TLS: %w", err)
	}
	return m, cfg, nil
}

// withSecurity adds the security settings to getCmdLineOpts' parsed
// view, in mongod's config-file shape (the key file's path, never the key).
func (a *App) withSecurity(parsed bson.D) bson.D {
	sec := a.cfg.Security
	if sec.Auth || sec.KeyFile != "" {
		d := bson.D{{Key: "authorization", Value: "enabled"}}
		if sec.KeyFile != "" {
			d = append(d, bson.E{Key: "keyFile", Value: sec.KeyFile})
		}
		parsed = append(parsed, bson.E{Key: "security", Value: d})
	}
	if sec.TLSMode == server.TLSDisabled {
		return parsed
	}
	tls := bson.D{{Key: "mode", Value: sec.TLSMode.String()}, {Key: "certificateKeyFile", Value: sec.TLS.CertificateKeyFile}}
	if sec.TLS.CAFile != "" {
		tls = append(tls, bson.E{Key: "CAFile", Value: sec.TLS.CAFile})
	}
	for i, e := range parsed {
		if net, ok := e.Value.(bson.D); ok && e.Key == "net" {
			parsed[i].Value = append(net, bson.E{Key: "tls", Value: tls})
		}
	}
	return parsed
}

// Auth exposes users, roles and the keyFile (for replication and tests).
func (a *App) Auth() *auth.Manager { return a.auth }

// warnIfOpen prints mongod's start-up warning when access control is off,
// louder when clients beyond this machine can connect.
func warnIfOpen(log *slog.Logger, addr net.Addr, sec Security) {
	if sec.Auth || sec.KeyFile != "" {
		return
	}
	tcp, ok := addr.(*net.TCPAddr)
	if ok && !tcp.IP.IsLoopback() {
		log.Error("WARNING: Access control is not enabled for the database, and the server listens on a "+
			"non-loopback address: anyone who can reach it can read and write all data and configuration. "+
			"Start with --auth (and create a user) or listen on 127.0.0.1 only", "addr", addr.String())
		return
	}
	log.Warn("WARNING: Access control is not enabled for the database. " +
		"Read and write access to data and configuration is unrestricted")
}
