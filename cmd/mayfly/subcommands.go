package main

import (
	"errors"
	"flag"
	"os"
)

// dispatch runs a subcommand (`mayfly backup ...`) or the server.
func dispatch(args []string) error {
	if len(args) > 0 && args[0] == "backup" {
		err := runBackup(args[1:], os.Stdout)
		if errors.Is(err, flag.ErrHelp) {
			return nil // the usage was asked for and printed
		}
		return err
	}
	return run(args)
}
