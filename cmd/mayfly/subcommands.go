package main

import "os"

// dispatch runs a subcommand (`mayfly backup ...`) or the server.
func dispatch(args []string) error {
	if len(args) > 0 && args[0] == "backup" {
		return runBackup(args[1:], os.Stdout)
	}
	return run(args)
}
