package replaytest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/replay/replaytest"
)

// corpusDir is sessionlog's own fixture corpus, written by
// `go run ./internal/cmd/gencorpus`.
const corpusDir = "../../testdata/sessions"

// regenerateCorpus says how to change the corpus.
const regenerateCorpus = "add it to internal/cmd/gencorpus, then run `go run ./internal/cmd/gencorpus` and `go test ./replay/replaytest -run Corpus -update` from the repository root"

// TestCorpus replays every fixture of the corpus with the built-in
// projections and compares their states with the goldens: a change in a
// projection's behaviour fails here with the first differing JSON path.
func TestCorpus(t *testing.T) {
	replaytest.Dir(t, corpusDir, nil)
}

// TestGoldenOfOneFixture pins one fixture with projections of the caller's
// choosing (the package doc's second example).
func TestGoldenOfOneFixture(t *testing.T) {
	replaytest.Golden(t, filepath.Join(corpusDir, "rollback.jsonl"), projection.NewAgent(), projection.NewTranscript())
}

// TestCorpusFormatVersions fails when a format version this library reads
// (eventlog.Version among them) has no fixture: a new version needs its
// own sessions before it ships, and an old one keeps its fixtures while it
// is still read.
func TestCorpusFormatVersions(t *testing.T) {
	have := map[int64][]string{}
	for _, f := range fixtures(t) {
		info, err := store(f).StatPath(t.Context(), f)
		require.NoError(t, err, f)
		have[info.Header.Version] = append(have[info.Header.Version], filepath.Base(f))
	}
	require.Contains(t, eventlog.SupportedVersions(), eventlog.Version)
	for _, v := range eventlog.SupportedVersions() {
		if len(have[int64(v)]) == 0 {
			t.Errorf("format version %d has no fixture in %s: %s", v, corpusDir, regenerateCorpus)
		}
	}
}

// TestCorpusCoverage keeps the corpus covering what it claims: every type
// of the agent vocabulary and both reserved types, packed rows, both
// encodings, a fork and a child, nested rollbacks, a resumed crash.
func TestCorpusCoverage(t *testing.T) {
	vocabulary := []string{
		"turn/start", "user/message", "step/start", "assistant/chunk", "assistant/reasoning",
		"assistant/message", "tool/call", "tool/approval", "tool/result", "usage", "step/end",
		"turn/end", "memory/set", "memory/delete", "provider/state", "slot/switch",
		"context/compacted", "plan/set", eventlog.TypeCheckpoint, eventlog.TypeRollback,
	}
	types := map[string]bool{}
	encodings := map[string]bool{}
	modes := map[string]bool{}
	packed := map[string]bool{} // packed types
	synthetic, interrupted, maxRollbacks := false, false, 0
	for _, f := range fixtures(t) {
		encodings[file.EncodingOfPath(f)] = true
		h, err := store(f).OpenPath(t.Context(), f)
		require.NoError(t, err, f)
		if p := h.Header().Parent; p != nil {
			modes[p.Mode] = true
		}
		rollbacks := 0
		for e, err := range h.Read(t.Context(), 0, handle.End) {
			require.NoError(t, err, f)
			types[e.Type] = true
			switch {
			case e.Type == eventlog.TypeRollback:
				rollbacks++
			case e.Type == "tool/result" && bytes.Contains(e.Data, []byte(`"synthetic":true`)):
				synthetic = true
			case e.Type == "turn/end" && bytes.Contains(e.Data, []byte(`"kind":"interrupted"`)):
				interrupted = true
			}
		}
		require.NoError(t, h.Close())
		maxRollbacks = max(maxRollbacks, rollbacks)
		for _, typ := range packedTypes(t, f) {
			packed[typ] = true
		}
	}
	for _, typ := range vocabulary {
		require.True(t, types[typ], "no fixture holds a %s event: %s", typ, regenerateCorpus)
	}
	require.True(t, encodings[handle.EncodingRaw] && encodings[handle.EncodingZstd], "want raw and zstd fixtures")
	require.True(t, modes[eventlog.ModeFork] && modes[eventlog.ModeChild], "want a fork and a child")
	require.True(t, packed["assistant/chunk"], "want a packed run of assistant/chunk")
	require.GreaterOrEqual(t, len(packed), 2, "want a packed run of a type besides assistant/chunk")
	require.GreaterOrEqual(t, maxRollbacks, 3, "want a fixture with nested rollbacks")
	require.True(t, synthetic && interrupted, "want a resumed crash: synthetic results and an interrupted turn")
}

// TestCorpusStateDigests checks the state digests the corpus's checkpoints
// recorded against the built-in projections as they are now. It fails
// when a projection's behaviour changed without a new version: every
// stored checkpoint naming the old version would then fail verify.
func TestCorpusStateDigests(t *testing.T) {
	verified := 0
	for _, f := range fixtures(t) {
		h, err := store(f).OpenPath(t.Context(), f)
		require.NoError(t, err, f)
		res, err := checkpoint.Verify(t.Context(), h, replaytest.Builtins()...)
		require.NoError(t, h.Close())
		var de *replay.DigestError
		if errors.As(err, &de) && de.Projection != "" {
			t.Errorf("%s: the %s state at the checkpoint at seq %d no longer has the digest it recorded: "+
				"%s changed behaviour without a version bump, so every stored checkpoint naming it fails verify. "+
				"Bump its Version(), or if no stored session can carry the old digest, regenerate the corpus (go run ./internal/cmd/gencorpus)",
				f, de.Projection, de.Seq, de.Projection)
			continue
		}
		require.NoError(t, err, f)
		verified += res.Verified
	}
	require.Positive(t, verified, "want a checkpoint with a state digest in the corpus")
}

func fixtures(t *testing.T) []string {
	t.Helper()
	fs, err := replaytest.Fixtures(corpusDir)
	require.NoError(t, err)
	require.NotEmpty(t, fs)
	return fs
}

func store(fixture string) *file.Store {
	return file.New(afero.NewOsFs(), filepath.Dir(fixture))
}

// packedTypes returns the types of the packed rows in a fixture's file.
func packedTypes(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if strings.HasSuffix(path, ".zst") {
		dec, err := zstd.NewReader(nil)
		require.NoError(t, err)
		defer dec.Close()
		data, err = dec.DecodeAll(data, nil)
		require.NoError(t, err, path)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, eventlog.MaxRowSize+1)
	for sc.Scan() {
		var row struct {
			Type string `json:"type"`
			N    int    `json:"n"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &row))
		if row.N >= 2 && !slices.Contains(out, row.Type) {
			out = append(out, row.Type)
		}
	}
	require.NoError(t, sc.Err())
	return out
}
