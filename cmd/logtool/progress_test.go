package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProgressOnlyOnATerminal checks that verify DIR, convert and gc draw
// a progress line on stderr when it is a terminal, clear it when done,
// and write nothing of it when piped.
func TestProgressOnlyOnATerminal(t *testing.T) {
	dir, ids := storeOfFixtures(t)
	term := map[string]string{"SESSIONLOG_TERMINAL": "1", "NO_COLOR": "1"}
	for _, tc := range []struct {
		name  string
		args  []string
		shown string
		code  int
	}{
		{"verify", []string{"verify", dir}, "verify 11 files [", 0},
		{"convert", []string{"convert", "--encoding", "zstd", ids["rollback.jsonl"]}, "convert 01KB0000000000000000000004 (2.7 KiB) to zstd |", 0},
		{"gc", []string{"gc", "--older-than", "3650d", "--dry-run"}, "gc " + dir + " |", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := logtoolEnv(t, term, "", append([]string{"--dir", dir}, tc.args...)...)
			require.Equal(t, tc.code, res.code, res.stderr)
			require.Contains(t, res.stderr, "\r"+tc.shown)
			require.True(t, strings.HasSuffix(res.stderr, "\r\x1b[K"), "the line is cleared at the end: %q", res.stderr)
			for l := range strings.SplitSeq(res.stderr, "\r") {
				require.LessOrEqual(t, len([]rune(strings.TrimSuffix(l, "\x1b[K"))), 79, "fits the terminal: %q", l)
			}
			if tc.name == "verify" {
				require.Contains(t, res.stderr, " 100% ")
				require.Equal(t, 11, strings.Count(res.stdout, "\n"), "the results still come one a line")
			}
			piped := logtool(t, "", append([]string{"--dir", dir}, tc.args...)...)
			require.NotContains(t, piped.stderr, "\r")
		})
	}
}
