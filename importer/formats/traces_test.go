package formats_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/importertest"
	"github.com/sessionlog/sessionlog/internal/tracestest"
)

// realTraces are the real traces of ../shared/traces, by format.
var realTraces = []struct {
	format string
	globs  []string
}{
	{"claude", []string{"claude-code-spotter/*.jsonl", "claude-code-spotter/*/subagents/*.jsonl"}},
	{"codex", []string{"codex/rollout-*.jsonl"}},
	{"dsh", []string{"dsh-deepseek-harness/*/session.jsonl"}},
	{"swe-agent", []string{"swe-agent/*/*.traj", "swe-agent/*/*/*.traj"}},
}

// TestRealTracesLossless imports every real trace and rebuilds its source
// records from the imported session: record by record, they are the
// source's.
func TestRealTracesLossless(t *testing.T) {
	reg := formats.Registry()
	for _, tc := range realTraces {
		imp, err := reg.Lookup(tc.format)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		var files []string
		for _, g := range tc.globs {
			files = append(files, tracestest.Glob(t, g)...)
		}
		for _, path := range files {
			t.Run(tc.format+"/"+filepath.Base(path), func(t *testing.T) {
				src, err := os.ReadFile(path)
				require.NoError(t, err)
				s, err := imp.Parse(t.Context(), bytes.NewReader(src), path, importer.Config{})
				require.NoError(t, err)
				importertest.CheckSession(t, s, tc.format)
				importertest.CheckLossless(t, imp, src, s)
			})
		}
	}
}
