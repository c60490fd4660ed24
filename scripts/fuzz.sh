#!/usr/bin/env bash
# Runs every fuzz target of the module, one after the other (Go fuzzes one
# target per `go test` invocation and package), each for FUZZTIME (a
# duration such as 10m, or an execution count such as 2000x; default
# 1000x) on one worker, and prints per target the executions, the CPU seconds
# the test process and its fuzz worker spent (user + system: on a shared
# machine wall time says little), the executions per CPU minute, and
# whether the target found a crasher. A crasher is kept where Go puts it
# (testdata/fuzz/FuzzX/<hash>), to be committed with its fix as a
# regression seed; the script then exits 1.
#
#   scripts/fuzz.sh                 # CI: 1,000 inputs each
#   scripts/fuzz.sh 10m             # the long run (docs/reliability.md)
#   scripts/fuzz.sh 30s ./handle/file/ ./replay/   # the targets of some packages
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzztime=${1:-1000x}
shift || true
want=("$@")
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# The corpus a run grows is kept where `go test -fuzz` keeps it.
cache=$(go env GOCACHE)/fuzz/$(go list -m)
status=0
TIMEFORMAT='%U %S'
printf '%-28s %-26s %10s %8s %12s %s\n' package target execs cpu-s execs/cpu-min result
while read -r dir name; do
	pkg=./$dir/
	if [ ${#want[@]} -gt 0 ]; then
		match=0
		for p in "${want[@]}"; do [ "${p%/}/" = "$pkg" ] && match=1; done
		[ $match -eq 1 ] || continue
	fi
	test=$bin/$(tr / _ <<<"$dir").test
	# -fuzz at build time instruments the binary for coverage guidance.
	[ -x "$test" ] || go test -c -fuzz=. -o "$test" "$pkg" || { status=1; continue; }
	# bash's time reports the CPU of the test process and of the worker it waits for.
	cpu=$( { time (cd "$root/$dir" && "$test" -test.run '^$' -test.fuzz "^${name}\$" \
		-test.fuzztime "$fuzztime" -test.parallel 1 -test.fuzzcachedir "$cache/$dir" >"$bin/out" 2>&1;
		echo $? >"$bin/rc") ; } 2>&1)
	rc=$(cat "$bin/rc")
	execs=$(grep -oE 'execs: [0-9]+' "$bin/out" | tail -1 | grep -oE '[0-9]+')
	execs=${execs:-0}
	read -r user sys <<<"$cpu"
	secs=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.1f", u+s}')
	rate=$(awk -v e="$execs" -v s="$secs" 'BEGIN{ if (s>0) printf "%d", e*60/s; else print "-" }')
	result=ok
	if grep -q 'Failing input written' "$bin/out"; then
		result=CRASHER
		status=1
		cat "$bin/out" >&2
	elif [ "$rc" -ne 0 ] && ! grep -q 'context deadline exceeded' "$bin/out"; then
		result=FAIL
		status=1
		cat "$bin/out" >&2
	fi
	# (A duration that ends while a loaded machine keeps the worker busy can
	# end in "context deadline exceeded" with no failing input: not a crasher.
	# Counts such as 2000x, as CI runs, end without a deadline.)
	printf '%-28s %-26s %10s %8s %12s %s\n' "$pkg" "$name" "$execs" "$secs" "$rate" "$result"
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(' . | grep -v '^\./bench/' |
	# The SDK adapters' targets only when named: their instrumented build
	# compiles a whole SDK (minutes, over a GB of memory).
	if [ ${#want[@]} -gt 0 ]; then cat; else grep -v -e '^\./adapters/' -e '^\./examples/'; fi |
	sed -E 's#^\./(.+)/[^/]+:[0-9]+:func (Fuzz[A-Za-z0-9_]+)\(.*#\1 \2#' | sort)
exit $status
