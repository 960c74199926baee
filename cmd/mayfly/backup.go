package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wire"
)

// backupTimeout bounds the whole backup: a checkpoint hard-links the
// storage engine's files and copies its write-ahead log, which takes
// seconds even for a large database.
const backupTimeout = 30 * time.Minute

// runBackup is `mayfly backup --addr HOST:PORT --to DIR`: it asks the
// running server to write a consistent copy of its data directory to DIR,
// on the server's machine, while writes go on. `mayfly --dbpath DIR`
// serves the copy.
func runBackup(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mayfly backup", flag.ContinueOnError)
	addr := fs.String("addr", env("MAYFLY_ADDR", "127.0.0.1:27017"), "address of the running server (MAYFLY_ADDR)")
	to := fs.String("to", "", "directory to create for the backup, on the server's machine; must not exist")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mayfly backup --addr HOST:PORT --to DIR")
		fs.PrintDefaults()
	}
	if wantsHelp(args) {
		fs.SetOutput(stdout)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *to == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("backup: --to DIR is required")
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("backup: %s already exists", dir)
	}
	reply, err := runAdminCommand(*addr, bson.D{{Key: "mayflyCheckpoint", Value: 1}, {Key: "to", Value: dir}})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup of %s written to %s in %v ms\n", *addr, dir, lookupValue(reply, "millis"))
	return nil
}

// runAdminCommand sends one command to the admin database over the wire
// protocol and returns its reply, or the server's error.
func runAdminCommand(addr string, cmd bson.D) (bson.D, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(backupTimeout)); err != nil {
		return nil, err
	}
	cmd = append(cmd, bson.E{Key: "$db", Value: "admin"})
	if err := wire.NewWriter(conn, nil).WriteMsg(0, cmd); err != nil {
		return nil, fmt.Errorf("send to %s: %w", addr, err)
	}
	msg, err := wire.ReadMessage(conn, nil)
	if err != nil {
		return nil, fmt.Errorf("reply from %s: %w", addr, err)
	}
	reply, err := msg.Command()
	if err != nil {
		return nil, fmt.Errorf("reply from %s: %w", addr, err)
	}
	if ok, _ := lookupValue(reply, "ok").(float64); ok != 1 {
		return nil, fmt.Errorf("%v (%v): %v", lookupValue(reply, "codeName"), lookupValue(reply, "code"), lookupValue(reply, "errmsg"))
	}
	return reply, nil
}

func lookupValue(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}
