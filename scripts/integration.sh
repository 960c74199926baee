#!/usr/bin/env bash
# Runs the integration tests as N test processes at once (default 2), each
# with every Nth test by name. Most of an integration test's time is spent
# waiting for processes, elections and expiry rather than on a CPU, so
# two processes on a 2-core machine take little more than half the time
# of one. Test servers claim their ports with lock files, so processes do
# not collide. The hostile-client tests run first, alone: they measure the
# server's memory against a budget, which a second test process's load
# would move.
# Usage: scripts/integration.sh [N] [extra go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2}
shift || true
go test -count=1 -c -o .cache/integration.test ./integration
mapfile -t tests < <(.cache/integration.test -test.list '.*' | grep '^Test' | grep -v '^TestHostile' | sort)
if [ "${#tests[@]}" -eq 0 ]; then
	echo "no integration tests listed" >&2
	exit 1
fi
if ! (cd integration && ../.cache/integration.test -test.timeout 25m -test.run '^TestHostile' "$@" \
	>../.cache/integration-hostile.log 2>&1); then
	grep -E -- '^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:' .cache/integration-hostile.log | head -n 200 || true
	echo "integration: the hostile-client tests failed"
	exit 1
fi
echo "integration: the hostile-client tests passed"
pids=()
for ((i = 0; i < n; i++)); do
	names=()
	for ((j = i; j < ${#tests[@]}; j += n)); do
		names+=("${tests[j]}")
	done
	pattern="^($(
		IFS='|'
		echo "${names[*]}"
	))\$"
	(cd integration && ../.cache/integration.test -test.timeout 25m -test.run "$pattern" "$@" \
		>"../.cache/integration-$i.log" 2>&1 && echo 0 >"../.cache/integration-$i.rc" ||
		echo 1 >"../.cache/integration-$i.rc") &
	pids+=($!)
done
wait "${pids[@]}" || true
status=0
for ((i = 0; i < n; i++)); do
	rc=$(cat ".cache/integration-$i.rc")
	tail -n 40 ".cache/integration-$i.log" | grep -v '^=== ' || true
	echo "integration group $((i + 1)) of $n: exit $rc"
	if [ "$rc" != 0 ]; then
		grep -E -- '^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:' ".cache/integration-$i.log" | head -n 200 || true
		status=1
	fi
done
exit "$status"
