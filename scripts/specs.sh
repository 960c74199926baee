#!/usr/bin/env bash
# Lays out the drivers' unified specification tests that TestUnifiedSpec
# runs, as mongodb/specifications' source/ directory, in .cache/specifications.
# The JSON files come from the last Go driver module that ships them in its
# testdata (go.mongodb.org/mongo-driver/v2@v2.2.0), fetched through the Go
# module proxy like any dependency: CI machines reach the proxy, not GitHub.
# Usage: scripts/specs.sh [dir]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.cache/specifications}
module=go.mongodb.org/mongo-driver/v2@v2.2.0
if [ "$(cat "$out/MODULE" 2>/dev/null)" = "$module" ]; then
	exit 0
fi
src=$(cd "$(mktemp -d)" && go mod download -json "$module" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
rm -rf "$out"
# spec directory (as the runner names it) <- the module's testdata directory
while read -r to from; do
	mkdir -p "$out/source/$to"
	cp "$src/testdata/$from"/*.json "$out/source/$to/"
done <<'MAP'
unified-test-format/tests/valid-pass unified-test-format/valid-pass
crud/tests/unified crud/unified
retryable-reads/tests/unified retryable-reads/unified
retryable-writes/tests/unified retryable-writes/unified
change-streams/tests/unified change-streams
sessions/tests sessions
command-logging-and-monitoring/tests/monitoring command-monitoring
command-logging-and-monitoring/tests/logging command-monitoring/logging
collection-management/tests collection-management
versioned-api/tests versioned-api
index-management/tests index-management
run-command/tests/unified run-command
MAP
chmod -R u+w "$out"
echo "$module" > "$out/MODULE"
