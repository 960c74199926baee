package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/auth"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/tlsconf"
)

// backupTimeout bounds the whole backup: a checkpoint hard-links the
// storage engine's files and copies its write-ahead log, which takes
// seconds even for a large database.
const backupTimeout = 30 * time.Minute

// backupOptions are `mayfly backup`'s flags, named as mongodump names them.
type backupOptions struct {
	addr, to                         string
	cred                             auth.Credential
	tls                              bool
	tlsCAFile, tlsCertificateKeyFile string
}

func backupFlags(stdout io.Writer, args []string) (*flag.FlagSet, *backupOptions) {
	o := &backupOptions{}
	fs := subcommandFlags("backup", "usage: mayfly backup --addr HOST:PORT --to DIR [--username U --password P] [--tls ...]", stdout, args)
	fs.StringVar(&o.addr, "addr", env("MAYFLY_ADDR", "127.0.0.1:27017"), "address of the running server (MAYFLY_ADDR)")
	fs.StringVar(&o.to, "to", "", "directory to create for the backup, on the server's machine; must not exist")
	fs.StringVar(&o.cred.User, "username", "", "log in as this user (a server with --auth; the user needs the fsync action: hostManager, clusterAdmin or root)")
	fs.StringVar(&o.cred.Password, "password", env("MAYFLY_PASSWORD", ""), "the user's password (MAYFLY_PASSWORD, which keeps it out of the process list)")
	fs.StringVar(&o.cred.DB, "authenticationDatabase", "admin", "the database the user is defined in")
	fs.BoolVar(&o.tls, "tls", false, "connect over TLS")
	fs.StringVar(&o.tlsCAFile, "tlsCAFile", "", "with --tls, the CA that signed the server's certificate")
	fs.StringVar(&o.tlsCertificateKeyFile, "tlsCertificateKeyFile", "", "with --tls, a client certificate and key to present")
	return fs, o
}

// runBackup is `mayfly backup --addr HOST:PORT --to DIR`: it asks the
// running server to write a consistent copy of its data directory to DIR,
// on the server's machine, while writes go on. `mayfly --dbpath DIR`
// serves the copy.
func runBackup(args []string, stdout io.Writer) error {
	fs, o := backupFlags(stdout, args)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.to == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("backup: --to DIR is required")
	}
	dir, err := filepath.Abs(o.to)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("backup: %s already exists", dir)
	}
	reply, err := o.runAdminCommand(bson.D{{Key: "mayflyCheckpoint", Value: 1}, {Key: "to", Value: dir}})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup of %s written to %s in %v ms\n", o.addr, dir, lookupValue(reply, "millis"))
	return nil
}

// runAdminCommand sends one command to the admin database over the wire
// protocol, after logging in when a user is named, and returns its reply
// or the server's error.
func (o *backupOptions) runAdminCommand(cmd bson.D) (bson.D, error) {
	ctx, cancel := context.WithTimeout(context.Background(), backupTimeout)
	defer cancel()
	conn, rt, err := o.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(backupTimeout))
	reply, err := rt(ctx, "admin", cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.addr, err)
	}
	if ok, _ := lookupValue(reply, "ok").(float64); ok != 1 {
		return nil, fmt.Errorf("%v (%v): %v", lookupValue(reply, "codeName"), lookupValue(reply, "code"), lookupValue(reply, "errmsg"))
	}
	return reply, nil
}

func (o *backupOptions) dial(ctx context.Context) (net.Conn, auth.RoundTrip, error) {
	var tlsCfg *tls.Config
	if o.tls {
		host, _, err := net.SplitHostPort(o.addr)
		if err != nil {
			return nil, nil, err
		}
		if tlsCfg, err = tlsconf.Client(tlsconf.Options{CAFile: o.tlsCAFile, CertificateKeyFile: o.tlsCertificateKeyFile}, host); err != nil {
			return nil, nil, err
		}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return auth.Dial(dialCtx, o.addr, tlsCfg, o.cred)
}

// lookupValue is d's field key, nil when there is none.
func lookupValue(d bson.D, key string) any {
	v, _ := bsonutil.Field(d, key)
	return v
}
