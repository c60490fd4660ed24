package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// committed is the corpus in the repository.
const committed = "../../../testdata/sessions"

const regenerate = "regenerate it from the repository root: go run ./internal/cmd/gencorpus && go test ./replay/replaytest -run Corpus -update"

// TestCorpusIsUpToDate checks that the committed corpus is what this
// program writes: nobody edited a fixture by hand, and nobody changed the
// program without regenerating. Raw files and README.md must be
// byte-identical; zstd files must hold the same logical log (their bytes
// may change with the compressor's version).
func TestCorpusIsUpToDate(t *testing.T) {
	dir := t.TempDir()
	_, err := generate(t.Context(), dir)
	require.NoError(t, err)

	require.Equal(t, corpusFiles(t, dir), corpusFiles(t, committed), "the committed corpus has other files than gencorpus writes: "+regenerate)
	for _, name := range corpusFiles(t, dir) {
		fresh, old := filepath.Join(dir, name), filepath.Join(committed, name)
		if strings.HasSuffix(name, ".zst") {
			require.Equal(t, logicalLog(t, fresh), logicalLog(t, old), "%s holds another log than gencorpus writes: %s", name, regenerate)
			continue
		}
		require.Equal(t, read(t, fresh), read(t, old), "%s differs from what gencorpus writes: %s", name, regenerate)
	}
}

// TestGenerateIsDeterministic: two runs write the same bytes, zstd included.
func TestGenerateIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	_, err := generate(t.Context(), a)
	require.NoError(t, err)
	_, err = generate(t.Context(), b)
	require.NoError(t, err)
	for _, name := range corpusFiles(t, a) {
		require.True(t, bytes.Equal(read(t, filepath.Join(a, name)), read(t, filepath.Join(b, name))), name)
	}
}

// TestGenerateKeepsGoldens: regenerating replaces sessions and README but
// leaves goldens, so their diff shows in review after -update.
func TestGenerateKeepsGoldens(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "vocabulary.jsonl.agent-v1.golden.json")
	require.NoError(t, os.WriteFile(keep, []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.jsonl"), []byte("x"), 0o644))
	ws, err := generate(t.Context(), dir)
	require.NoError(t, err)
	require.FileExists(t, keep)
	require.NoFileExists(t, filepath.Join(dir, "old.jsonl"))
	var size int64
	for _, w := range ws {
		size += w.size
		require.Positive(t, w.size)
	}
	require.Less(t, size, int64(100<<10), "keep the corpus small")
}

func TestRunNeedsRepoRoot(t *testing.T) {
	t.Chdir(t.TempDir())
	err := run(context.Background(), "")
	require.ErrorContains(t, err, "run from the repository root")
}

// corpusFiles lists the files gencorpus owns in dir: sessions and README.
func corpusFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".jsonl.zst") || n == "README.md" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// logicalLog is a session file's header and the canonical bytes of its
// own events.
func logicalLog(t *testing.T, path string) []string {
	t.Helper()
	h, err := file.New(afero.NewOsFs(), filepath.Dir(path)).OpenPath(t.Context(), path)
	require.NoError(t, err)
	defer h.Close()
	hdr, err := eventlog.EncodeHeader(h.Header())
	require.NoError(t, err)
	out := []string{string(hdr)}
	for e, err := range h.Read(t.Context(), h.Header().FirstSeq(), handle.End) {
		require.NoError(t, err)
		out = append(out, string(eventlog.Canon(e)))
	}
	return out
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
