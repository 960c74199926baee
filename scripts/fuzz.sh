#!/usr/bin/env bash
# Runs every go test -fuzz target in the module for the given time each.
# Usage: scripts/fuzz.sh 10s     (CI runs it briefly; use 10m for a real run)
#
# A duration -fuzztime races Go's fuzzing coordinator against its own
# deadline: on a loaded machine a worker still busy when the time runs out
# makes the run fail with a bare "context deadline exceeded" and no input
# written (golang/go#51484). Such a run is tried once more; a failure that
# wrote an input under testdata/fuzz, or any other failure, fails at once.
set -euo pipefail
fuzztime=${1:-30s}
cd "$(dirname "$0")/.."

# run_target PKG DIR TARGET: fuzzes one target, retrying a deadline-only failure once.
run_target() {
	local pkg=$1 dir=$2 target=$3 log attempt
	log=$(mktemp)
	for attempt in 1 2; do
		echo "fuzz $pkg $target ($fuzztime)"
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
			rm -f "$log"
			return 0
		fi
		if ! deadline_only "$log" || [ -n "$(new_inputs "$dir" "$target")" ]; then
			break
		fi
		echo "fuzz $pkg $target: the coordinator's deadline race, no input found; running again"
	done
	rm -f "$log"
	return 1
}

# deadline_only LOG: the failure is the coordinator's deadline and nothing else.
deadline_only() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

# new_inputs DIR TARGET: inputs under testdata/fuzz that git does not know.
new_inputs() {
	git -C "$1" ls-files --others --exclude-standard "testdata/fuzz/$2" 2>/dev/null
}

for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		run_target "$pkg" "$dir" "$target"
	done
done
