package formats_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/internal/testkit/tracestest"
)

// realTraces are the real third-party traces (internal/testkit/tracestest), by format.
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
// source's. The session holds every prompt, assistant text, call and
// result of the source (counted apart from the importer), no other
// user/message, and no turn left open. The default run leaves out traces
// over 1 MB (the 3 MB Claude Code transcript; its subagents' transcripts
// are Claude Code's too), which SESSIONLOG_SWEEPS=full imports.
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
			if fi, err := os.Stat(path); err == nil && fi.Size() > 1<<20 && !sweep.Full() {
				continue
			}
			t.Run(tc.format+"/"+filepath.Base(path), func(t *testing.T) {
				src, err := os.ReadFile(path)
				require.NoError(t, err)
				s, err := importer.Parse(t.Context(), imp, bytes.NewReader(src), path, importer.Config{})
				require.NoError(t, err)
				importertest.CheckSession(t, s, tc.format)
				importertest.CheckLossless(t, imp, src, s)
				want, err := importertest.SourceCounts(tc.format, src)
				require.NoError(t, err)
				importertest.CheckCounts(t, want, importertest.SessionCounts(s.Events), path)
				importertest.CheckClosed(t, s.Events)
				if lb, ok := imp.(importer.LineBased); ok && lb.LineBased() {
					// The real JSONL traces are compact: the records
					// rebuilt from the session, one a line, are the file
					// byte for byte.
					var b bytes.Buffer
					for _, e := range s.Events {
						if r, ok := importer.RecordOf(tc.format, e); ok {
							b.Write(r)
							b.WriteByte('\n')
						}
					}
					require.True(t, bytes.Equal(src, b.Bytes()), "%s: rebuilt byte for byte (%d bytes, want %d)", path, b.Len(), len(src))
				}
			})
		}
	}
}

// TestRealTrajectoriesReassemble: a .traj's records are its history and
// trajectory entries and the rest of its document; put back together they
// are the document (as JSON values: key order and escapes aside), so the
// records Records gives are the source's, not only what Parse kept.
func TestRealTrajectoriesReassemble(t *testing.T) {
	imp, err := formats.Registry().Lookup("swe-agent")
	require.NoError(t, err)
	files := append(tracestest.Glob(t, "swe-agent/*/*.traj"), tracestest.Glob(t, "swe-agent/*/*/*.traj")...)
	for _, path := range files {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		var doc struct {
			History    []json.RawMessage `json:"history"`
			Trajectory []json.RawMessage `json:"trajectory"`
		}
		require.NoError(t, json.Unmarshal(src, &doc))
		var recs []json.RawMessage
		require.NoError(t, imp.Records(bytes.NewReader(src), func(r json.RawMessage) error {
			recs = append(recs, r)
			return nil
		}))
		require.Len(t, recs, len(doc.History)+len(doc.Trajectory)+1)
		var rest map[string]any
		require.NoError(t, json.Unmarshal(recs[len(recs)-1], &rest))
		var history, trajectory []any
		for _, r := range recs[:len(doc.History)] {
			var v any
			require.NoError(t, json.Unmarshal(r, &v))
			history = append(history, v)
		}
		for _, r := range recs[len(doc.History) : len(recs)-1] {
			var v any
			require.NoError(t, json.Unmarshal(r, &v))
			trajectory = append(trajectory, v)
		}
		rest["history"], rest["trajectory"] = history, trajectory
		var want any
		require.NoError(t, json.Unmarshal(src, &want))
		require.Equal(t, want, any(rest), path)
	}
}
