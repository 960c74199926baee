// Package migrate is the pure part of chunk migration and balancing: the
// phases a migration passes through and what a member that finds a
// migration's record after a failover does with it, the new
// config.chunks of a committed move or split, and the balancer's choice
// of what to split and move. It does no I/O: internal/shardstate runs the
// donor and recipient sides, internal/commands the config server's
// commit, and they keep the records this package describes.
package migrate
