#!/usr/bin/env bash
# Runs the tests behind the figures of docs/reliability.md ("Figures") and
# prints their "figure:" lines, one per row of the tables; exits 1 when a
# test fails (a figure that breaks the promise fails its test).
#
#   scripts/figures.sh                           # CI-sized (.ci/run)
#   SESSIONLOG_SWEEPS=long scripts/figures.sh    # the long version (1,000 kills of a writer, 200 of copy and of import, per encoding)
#
# The tests' sweeps run a small sample unless SESSIONLOG_SWEEPS says
# otherwise (internal/testkit/sweep): this script runs them full (every point, CI
# sizes) unless it says long. The fuzzing figures come from
# scripts/fuzz.sh, which the long version runs too (10 minutes per
# target), so that it is one command.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "${SESSIONLOG_SWEEPS:-0}" = 0 ] && export SESSIONLOG_SWEEPS=full
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
run() {
	if ! go test -count=1 -v -timeout 60m "$@" >"$out" 2>&1; then
		status=1
		grep -E -- '--- FAIL|Error Trace|Error:|Messages:' "$out" | head -40 >&2
	fi
	# A -run that names tests no longer where it looks (a test moved to
	# another package) must not pass by running nothing.
	if grep -q 'no tests to run' "$out"; then
		status=1
		echo "figures.sh: go test $*: no tests to run" >&2
	fi
	grep -oE 'figure: .*' "$out" | sort -u
}
# (1) power cuts, (2) SIGKILL of a writer process.
run -run '^(TestCrashTornFlushSweep|TestCrashDuringCreate|TestCrashDuringCreateFrom|TestCrashDuringAppendAll|TestCrashDuringFork|TestCrashDuringDetach|TestCrashDuringDeleteCascade|TestConvertCrash|TestCompactCrash|TestCrashDuringCheckpoint|TestCrashDuringRepair|TestKillWriter)$' ./handle/file/
# (3) the corruption sweep, (4) ENOSPC on a tmpfs, (5) hostile inputs,
# (7) SIGKILL of logtool copy and import (8 rounds per encoding; 200 long),
# (8) a session's file unlinked, renamed or replaced under logtool append.
run ./internal/check/figures/
# (9) peak RSS of importing a 400 MB line in every format (without the race
# detector, whose shadow memory would be counted).
run -run '^TestImportHugeLine$' ./ops/ingest/
# (6) fuzzing, in the long version (CI runs scripts/fuzz.sh 1000x itself).
if [ "$SESSIONLOG_SWEEPS" = long ]; then
	# (10) a cluster writer's longest gap between acknowledgements while
	# the node its connection is on, a follower, is paused
	# (docs/distributed.md; timed, so only here).
	run -run '^TestClusterFollowerPauseGap$' ./handle/jetstream/
	scripts/fuzz.sh "${SESSIONLOG_FUZZ_TIME:-10m}" || status=1
fi
exit $status
