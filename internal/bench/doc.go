// Package bench is the logic behind cmd/mayfly-bench: it measures Mayfly
// against Redis and a do-nothing "null server" on the session workload,
// durable (j: true) inserts against the disk's raw fsync rate, an expiry
// storm (lateness to invisibility and to deletion, deletion throughput,
// the session workload's throughput during the storm) and resident memory
// with many live sessions.
//
// The bench is one parent process that starts every server as a child
// (Mayfly built from ./cmd/mayfly, Debian's redis-server, and the null
// server, which is this same binary re-executed) and runs every piece of
// client work in a further child (again this binary, re-executed), so that
// in "pinned" mode the servers run under `taskset -c 0` and the clients
// under `taskset -c 1`. Parent and children talk through a JSON Job on the
// child's standard input and a JSON JobResult on its standard output.
//
// Files by concern: config.go (sizes and flags), servers.go and build.go
// (child servers), procfs.go (CPU time and RSS from /proc), nullserver.go,
// tokens.go, hist.go and recorder.go (latency accounting), store*.go (the
// session operations over the Go driver and go-redis), workload.go (the
// 70/20/5/5 session mix), load.go, durable.go, expiry.go, job.go (the
// client child), replset.go and txn.go (three-member sets, whose clients
// run in this process), phases.go and run.go (orchestration), targets.go
// and report.go (the table and the JSON).
//
// Every load goes to 127.0.0.1 only, is bounded in count and in time, and
// stops by itself.
package bench
