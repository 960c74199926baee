package main

import (
	"errors"
	"flag"
	"io"
	"os"
)

// dispatch runs a subcommand (`mayfly backup ...`) or the server.
func dispatch(args []string) error {
	if len(args) > 0 && (args[0] == "backup" || args[0] == "route") {
		sub := map[string]func([]string, io.Writer) error{"backup": runBackup, "route": runRoute}[args[0]]
		err := sub(args[1:], os.Stdout)
		if errors.Is(err, flag.ErrHelp) {
			return nil // the usage was asked for and printed
		}
		return err
	}
	return run(args)
}
