package main

import (
	"errors"
	"flag"
	"fmt"
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

// subcommandFlags is the flag set of `mayfly name`: its usage line first,
// and, when help was asked for, printed to stdout rather than stderr.
func subcommandFlags(name, usage string, stdout io.Writer, args []string) *flag.FlagSet {
	fs := flag.NewFlagSet("mayfly "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if wantsHelp(args) {
		fs.SetOutput(stdout)
	}
	return fs
}
