package figures_test

import (
	"os"
	"testing"
)

// envLong selects the long version of every sweep.
const envLong = "SESSIONLOG_FIGURES"

// long reports whether the long version was asked for
// (SESSIONLOG_FIGURES=long).
func long() bool { return os.Getenv(envLong) == "long" }

// size returns ci, or long under SESSIONLOG_FIGURES=long.
func size(ci, long_ int) int {
	if long() {
		return long_
	}
	return ci
}

// figure logs one row of a figures table on t, as "figure: <table>: <row>",
// which the command in docs/reliability.md greps.
func figure(t testing.TB, table, format string, args ...any) {
	t.Helper()
	t.Logf("figure: "+table+": "+format, args...)
}
