#!/usr/bin/env bash
# Runs every go test -fuzz target in the module for the given time each.
# Usage: scripts/fuzz.sh 10s      (CI runs it briefly; use 10m for a real run)
#        scripts/fuzz.sh 20000x   (a number of executions per target)
#
# A duration is not given to -fuzztime. With one, Go's coordinator races
# its own deadline: the main loop can see the deadline before the workers'
# context is cancelled, and then a clean run fails with a bare "context
# deadline exceeded" and no input written (golang/go#75804, fixed in Go
# 1.27; the more CPU-starved the machine, the likelier). Instead each
# target's test binary fuzzes without an end and receives SIGINT, as from
# ^C, when the time is up; the coordinator checks an interrupt against the
# context it came from, so that end has no race. A count (NNNx) has no
# deadline at all and goes to -fuzztime as it is.
#
# So any failure is a real one: a crash, or an input that spent more than
# its CPU-time limit (internal/fuzzlimit), with the input written under
# testdata/fuzz. Nothing is retried.
set -euo pipefail
fuzztime=${1:-30s}
cd "$(dirname "$0")/.."
if ! [[ $fuzztime =~ ^[0-9]+[smhx]?$ ]]; then
	echo "usage: $0 DURATION|COUNT, such as 10s, 10m, 1h or 200000x" >&2
	exit 2
fi

# grace is how long a target may take to stop after SIGINT (its workers
# finish the input in hand, and a crash found is written) before SIGKILL;
# startup bounds the wait for fuzzing to start (compiled, seeds loaded).
grace=60
startup=300
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"

# run_target PKG DIR TARGET BIN: fuzzes one target with the package's
# instrumented test binary, run in the package's directory as go test does.
run_target() {
	local pkg=$1 dir=$2 target=$3 bin=$4
	local args=(-test.run '^$' -test.fuzz "^${target}\$" -test.fuzzcachedir "$fuzzcache/$pkg")
	echo "fuzz $pkg $target ($fuzztime)"
	case $fuzztime in
	*x) (cd "$dir" && "$bin" "${args[@]}" -test.fuzztime "$fuzztime") ;;
	*) interrupt_after "$dir" "$bin" "${args[@]}" ;;
	esac
}

# interrupt_after DIR BIN ARGS...: runs BIN in DIR and sends it SIGINT
# once it has fuzzed for $fuzztime. The clock starts at the coordinator's
# first "fuzz: elapsed" line, printed once it handles SIGINT; a signal
# before that would kill the binary instead.
interrupt_after() {
	local dir=$1 log pid waited
	shift
	log=$(mktemp -p "$bindir") # its own: a previous target's tee may still be writing
	(cd "$dir" && exec "$@") > >(tee "$log") 2>&1 &
	pid=$!
	for ((waited = 0; waited < startup * 5; waited++)); do
		if grep -q '^fuzz: elapsed' "$log" 2>/dev/null || ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		sleep "$fuzztime"
		kill -INT "$pid" 2>/dev/null || true
	fi
	(sleep "$grace" && kill -KILL "$pid" 2>/dev/null) &
	local watchdog=$! rc=0
	wait "$pid" || rc=$?
	kill "$watchdog" 2>/dev/null || true
	return "$rc"
}

for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	[ -n "$targets" ] || continue
	bin="$bindir/$(basename "$dir").test"
	# -fuzz at build time makes go test instrument the binary for coverage.
	go test -c -fuzz '^Fuzz' -o "$bin" "$pkg"
	for target in $targets; do
		run_target "$pkg" "$dir" "$target" "$bin"
	done
done
