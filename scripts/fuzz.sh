#!/usr/bin/env bash
# Runs every go test -fuzz target in the module for the given time each.
# Usage: scripts/fuzz.sh 10s     (CI runs it briefly; use 10m for a real run)
set -euo pipefail
fuzztime=${1:-30s}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
	done
done
