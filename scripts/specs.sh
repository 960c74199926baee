#!/usr/bin/env bash
# Lays out the drivers' specification tests that TestUnifiedSpec runs, as
# mongodb/specifications' source/ directory, in .cache/specifications.
# The JSON files come from Go driver modules that ship them in their
# testdata, fetched through the Go module proxy like any dependency: CI
# machines reach the proxy, not GitHub.
# - go.mongodb.org/mongo-driver/v2@v2.2.0, the last v2 module that ships
#   them: the unified-format directories;
# - go.mongodb.org/mongo-driver@v1.17.10: the transactions tests, most of
#   them in the legacy format (its runner's own), which TestUnifiedSpec
#   translates into the unified format before running them.
# Usage: scripts/specs.sh [dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.cache/specifications}
modules="go.mongodb.org/mongo-driver/v2@v2.2.0 go.mongodb.org/mongo-driver@v1.17.10"
if [ "$(cat "$out/MODULE" 2>/dev/null)" = "$modules" ]; then
	exit 0
fi
moduleDir() {
	(cd "$(mktemp -d)" && go mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}
rm -rf "$out"
# module, spec directory (as the runner names it) <- the module's testdata directory
while read -r module to from; do
	src=$(moduleDir "$module")
	mkdir -p "$out/source/$to"
	cp "$src/testdata/$from"/*.json "$out/source/$to/"
done <<'MAP'
go.mongodb.org/mongo-driver/v2@v2.2.0 unified-test-format/tests/valid-pass unified-test-format/valid-pass
go.mongodb.org/mongo-driver/v2@v2.2.0 crud/tests/unified crud/unified
go.mongodb.org/mongo-driver/v2@v2.2.0 retryable-reads/tests/unified retryable-reads/unified
go.mongodb.org/mongo-driver/v2@v2.2.0 retryable-writes/tests/unified retryable-writes/unified
go.mongodb.org/mongo-driver/v2@v2.2.0 change-streams/tests/unified change-streams
go.mongodb.org/mongo-driver/v2@v2.2.0 sessions/tests sessions
go.mongodb.org/mongo-driver/v2@v2.2.0 command-logging-and-monitoring/tests/monitoring command-monitoring
go.mongodb.org/mongo-driver/v2@v2.2.0 command-logging-and-monitoring/tests/logging command-monitoring/logging
go.mongodb.org/mongo-driver/v2@v2.2.0 collection-management/tests collection-management
go.mongodb.org/mongo-driver/v2@v2.2.0 versioned-api/tests versioned-api
go.mongodb.org/mongo-driver/v2@v2.2.0 index-management/tests index-management
go.mongodb.org/mongo-driver/v2@v2.2.0 run-command/tests/unified run-command
go.mongodb.org/mongo-driver@v1.17.10 transactions/tests/legacy transactions/legacy
go.mongodb.org/mongo-driver@v1.17.10 transactions/tests/unified transactions/unified
go.mongodb.org/mongo-driver@v1.17.10 transactions-convenient-api/tests/legacy convenient-transactions
MAP
chmod -R u+w "$out"
echo "$modules" > "$out/MODULE"
