package figures_test

import "testing"

// figure logs one row of a figures table on t, as "figure: <table>: <row>",
// which the command in docs/reliability.md greps.
func figure(t testing.TB, table, format string, args ...any) {
	t.Helper()
	t.Logf("figure: "+table+": "+format, args...)
}
