#!/usr/bin/env bash
# Runs the integration tests N at a time (default 2). Most of an
# integration test's time is spent waiting for processes, elections and
# expiry rather than on a CPU, so two at once on a 2-core machine take
# little more than half the time of one. N workers take the tests from one
# queue, each test in a test process of its own, the longest first
# (longestFirst) so that the workers end close together. Test servers
# claim their ports with lock files, so tests do not collide. The
# hostile-client tests run first, alone: they measure the server's memory
# against a budget, which a second test's load would move.
# Usage: scripts/integration.sh [N] [extra go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2}
shift || true
go test -count=1 -c -o .cache/integration.test ./integration
go build -o .cache/integration-bin/mayfly ./cmd/mayfly
export MAYFLY_INTEGRATION_BIN="$PWD/.cache/integration-bin/mayfly"
mapfile -t tests < <(.cache/integration.test -test.list '.*' | grep '^Test' | grep -v '^TestHostile' | sort)
if [ "${#tests[@]}" -eq 0 ]; then
	echo "no integration tests listed" >&2
	exit 1
fi
if ! (cd integration && ../.cache/integration.test -test.timeout 25m -test.run '^TestHostile' "$@" \
	>../.cache/integration-hostile.log 2>&1); then
	grep -E -- '^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:' .cache/integration-hostile.log | sed -n '1,200p' || true
	echo "integration: the hostile-client tests failed"
	exit 1
fi
echo "integration: the hostile-client tests passed"

# longestFirst are the tests that take longest (from the times this script
# prints at its end, the longest first): the queue starts with them. A name not listed here is
# queued after them; a stale name is left out.
longestFirst=(
	TestUnifiedSpec TestMigrations TestMigrationJepsen TestShardedReplicaShardFailover
	TestReplicaSetFailoverUnderLoad TestTransactionsListAppendUnderFaults TestTransactionsBankUnderFaults
	TestOldPrimaryReadsPlacementAgainWhenElected TestReadmeBlocksRun TestReplicaSetRetryableWriteAppliesOnce TestReplicaSetGroupedStatements
	TestReplicaSetLinearizable TestChangeStreamExpiryWarningsAcrossFailover
	TestChangeStreamResumesAcrossPrimaryKill9 TestOrphanExpiryShowsOneDelete TestReliabilityCrashHarness
)
declare -A listed=()
for name in "${tests[@]}"; do listed[$name]=1; done
queue=()
declare -A queued=()
for name in "${longestFirst[@]}"; do
	if [ -n "${listed[$name]:-}" ]; then
		queue+=("$name")
		queued[$name]=1
	fi
done
for name in "${tests[@]}"; do
	if [ -z "${queued[$name]:-}" ]; then
		queue+=("$name")
	fi
done
echo 0 >.cache/integration-next

# work I runs the queue's next test until none is left, appending each
# test's output and its time to worker I's log.
work() {
	local i=$1 k name start result
	shift
	local rc=0 log=".cache/integration-$i.log"
	: >"$log"
	while :; do
		k=$(flock .cache/integration-next.lock sh -c 'k=$(cat .cache/integration-next); echo $((k + 1)) >.cache/integration-next; echo "$k"')
		[ "$k" -lt "${#queue[@]}" ] || break
		name=${queue[k]}
		start=$SECONDS
		result=ok
		if ! (cd integration && ../.cache/integration.test -test.timeout 25m -test.run "^${name}\$" "$@") >".cache/integration-out/$name.log" 2>&1; then
			rc=1 result=FAIL
		fi
		cat ".cache/integration-out/$name.log" >>"$log"
		echo "$name $((SECONDS - start))s $result" >>".cache/integration-times-$i"
	done
	echo "$rc" >".cache/integration-$i.rc"
}
rm -rf .cache/integration-times-* .cache/integration-out
mkdir -p .cache/integration-out
pids=()
for ((i = 0; i < n; i++)); do
	work "$i" "$@" &
	pids+=($!)
done
wait "${pids[@]}" || true
status=0
for ((i = 0; i < n; i++)); do
	rc=$(cat ".cache/integration-$i.rc")
	tail -n 40 ".cache/integration-$i.log" | grep -v '^=== ' || true
	echo "integration worker $((i + 1)) of $n: exit $rc"
	if [ "$rc" != 0 ]; then
		grep -E -- '^(--- FAIL|FAIL|panic)|_test.go:[0-9]+:' ".cache/integration-$i.log" | sed -n '1,200p' || true
		status=1
	fi
done
if [ "$status" != 0 ]; then
	echo "integration: failed:"
	grep -h ' FAIL$' .cache/integration-times-* || true
	# A failed test's whole output, to its last lines: the servers' log
	# tails and goroutine dumps the harness prints are indented lines the
	# greps above leave out.
	for name in $(grep -h ' FAIL$' .cache/integration-times-* | cut -d' ' -f1); do
		echo "integration: the output of $name (its last 400 lines):"
		tail -n 400 ".cache/integration-out/$name.log"
	done
fi
echo "integration: the longest tests (longestFirst):"
# sed reads to the end: a head that exits early would end sort with
# SIGPIPE, which pipefail makes the script's exit status.
sort -k2,2nr .cache/integration-times-* | sed -n '1,15p'
exit "$status"
