package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// /dev/null is a character device but no terminal: output sent there is
// piped output (regression: replay > /dev/null took the terminal path,
// indenting the whole state in memory).
func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeCharDevice, "the case: a character device")
	a := &app{env: func(string) string { return "" }, stdout: f, stderr: f}
	require.False(t, a.isTerminal(f))
	require.True(t, a.wantJSON(false))
	require.Equal(t, defaultWidth, a.width(f))
}

// $SESSIONLOG_TERMINAL overrides detection: 1 both streams, 0 neither,
// stdout only stdout; $COLUMNS overrides the width on a terminal only.
func TestTerminalOverrides(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, tc := range []struct {
		env             map[string]string
		stdout, stderr  bool
		width, errWidth int
	}{
		{map[string]string{}, false, false, 80, 80},
		{map[string]string{envTerminal: "1"}, true, true, 80, 80},
		{map[string]string{envTerminal: "1", "COLUMNS": "132"}, true, true, 132, 132},
		{map[string]string{envTerminal: "1", "COLUMNS": "20"}, true, true, 80, 80}, // too narrow to believe
		{map[string]string{envTerminal: "stdout", "COLUMNS": "100"}, true, false, 100, 80},
		{map[string]string{envTerminal: "0", "COLUMNS": "100"}, false, false, 80, 80},
	} {
		a := &app{env: func(k string) string { return tc.env[k] }, stdout: &out, stderr: &errOut}
		require.Equal(t, tc.stdout, a.isTerminal(&out), "%v", tc.env)
		require.Equal(t, tc.stderr, a.isTerminal(&errOut), "%v", tc.env)
		require.Equal(t, tc.width, a.width(&out), "%v", tc.env)
		require.Equal(t, tc.errWidth, a.width(&errOut), "%v", tc.env)
		require.Equal(t, !tc.stdout, a.wantJSON(false), "%v", tc.env)
		require.True(t, a.wantJSON(true))
	}
}
