package replaytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaleGoldens(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"a.jsonl",
		"a.jsonl.agent-v1.golden.json",        // current
		"a.jsonl.agent-v0.golden.json",        // an older agent version
		"a.jsonl.mine-v3.golden.json",         // a projection this run does not hold: left alone
		"gone.jsonl.zst.agent-v1.golden.json", // its fixture is gone
		"notes.golden.json",                   // not a golden of a fixture
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	got, err := staleGoldens(dir, Builtins())
	require.NoError(t, err)
	require.Equal(t, []stale{
		{filepath.Join(dir, "a.jsonl.agent-v0.golden.json"), "agent is at version 1 now"},
		{filepath.Join(dir, "gone.jsonl.zst.agent-v1.golden.json"), "its fixture gone.jsonl.zst is gone"},
	}, got)
}

func TestRegenerateHint(t *testing.T) {
	require.Equal(t, `go test -run '^TestCorpus$/^vocabulary\.jsonl$' -update (or SESSIONLOG_UPDATE_GOLDEN=1 go test ...)`,
		regenerate("TestCorpus/vocabulary.jsonl"))
}
