package ingest_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/internal/testkit/tracestest"
	"github.com/sessionlog/sessionlog/ops/ingest"
)

// readTrace copies the real trace rel (under the traces folder) into w at
// path, and returns its bytes.
func readTrace(t *testing.T, w *world, rel, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tracestest.Dir(t), rel))
	require.NoError(t, err)
	w.write(path, b)
	return b
}

// records rebuilds the source records a session holds, in order.
func records(format string, events []eventlog.Event) []string {
	var out []string
	for _, e := range events {
		if r, ok := importer.RecordOf(format, e); ok {
			out = append(out, string(r))
		}
	}
	return out
}

// Regression: importing the same folder twice gave every session twice.
// The second import of a real transcript with its subagents writes nothing.
// The transcript is its first 300 records (3 MB whole, under
// SESSIONLOG_SWEEPS=full): what a copy taken while it was written holds.
func TestImportTwiceRealTrace(t *testing.T) {
	w := newWorld(t)
	const base = "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569"
	main := readTrace(t, w, base+".jsonl", "/src/S.jsonl")
	if !sweep.Full() {
		lines := bytes.SplitAfter(main, []byte("\n"))
		w.write("/src/S.jsonl", bytes.Join(lines[:300], nil))
	}
	readTrace(t, w, base+"/subagents/agent-a2898e3.jsonl", "/src/S/subagents/agent-a2898e3.jsonl")
	readTrace(t, w, base+"/subagents/agent-acompact-e1f845.jsonl", "/src/S/subagents/agent-acompact-e1f845.jsonl")
	first := w.importAll([]string{"/src/S.jsonl"})
	require.Equal(t, []ingest.Status{ingest.Created, ingest.Created, ingest.Created}, statuses(first))
	again := w.importAll([]string{"/src"})
	require.Equal(t, []ingest.Status{ingest.Unchanged, ingest.Unchanged, ingest.Unchanged}, statuses(again))
	for i := range again.Results {
		require.Equal(t, first.Results[i].ID, again.Results[i].ID)
	}
	require.Equal(t, 3, w.sessions(), "no session twice")
}

// TestImportGrownTranscript: a real Claude Code transcript imported while
// it was still being written (cut after a tool call whose result is not
// written yet: the import closed the turn) grows twice. Each import
// appends to the one session: a rollback (label import) undoing what the
// end had closed, then the new events. The session then holds every
// record of the whole file, and a third import changes nothing.
func TestImportGrownTranscript(t *testing.T) {
	w := newWorld(t)
	full := readTrace(t, w, "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl", "/tmp/full")
	lines := bytes.SplitAfter(full, []byte("\n"))
	var cuts []int
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"assistant"`)) && bytes.Contains(l, []byte(`"type":"tool_use"`)) && i > 10 {
			cuts = append(cuts, i+1)
		}
	}
	require.Greater(t, len(cuts), 10)
	var id string
	for k, cut := range []int{cuts[2], cuts[len(cuts)/2], len(lines)} {
		w.write("/src/agent-a2898e3.jsonl", bytes.Join(lines[:cut], nil))
		r := w.importAll([]string{"/src/agent-a2898e3.jsonl"}).Results[0]
		if k == 0 {
			require.Equal(t, ingest.Created, r.Status)
			id = r.ID
			continue
		}
		require.Equal(t, ingest.Appended, r.Status, "import %d: %s", k+1, r.Reason)
		require.Equal(t, id, r.ID)
	}
	events := w.events(id)
	s, err := importer.Parse(t.Context(), claudeImporter(t), bytes.NewReader(full), "x", importer.Config{})
	require.NoError(t, err)
	require.Equal(t, records("claude", s.Events), records("claude", events), "every record of the whole file")
	importertest.CheckCounts(t, importertest.SessionCounts(s.Events), importertest.SessionCounts(live(events)), "the live branch: a fresh import's conversation")
	importertest.CheckClosed(t, events)
	rollbacks := 0
	for _, e := range events {
		if e.Type == eventlog.TypeRollback {
			rollbacks++
		}
	}
	require.Equal(t, 2, rollbacks)
	require.Equal(t, ingest.Unchanged, w.importAll([]string{"/src/agent-a2898e3.jsonl"}).Results[0].Status)
}

// TestImportCodexFork: a Codex fork (session_meta.forked_from_id) imported
// with its parent is the parent's child, spawned at its last event; alone
// it stands on its own, its parent named in a label.
func TestImportCodexFork(t *testing.T) {
	line := func(typ, payload string) string {
		return `{"timestamp":"2026-01-01T00:00:00Z","type":"` + typ + `","payload":` + payload + `}` + "\n"
	}
	w := newWorld(t)
	w.write("/src/rollout-1.jsonl", []byte(line("session_meta", `{"id":"P"}`)+line("event_msg", `{"type":"task_started"}`)))
	w.write("/src/rollout-2.jsonl", []byte(line("session_meta", `{"id":"F","forked_from_id":"P"}`)))
	sum := w.importAll([]string{"/src"})
	require.Len(t, sum.Results, 2)
	info, err := w.st.Stat(t.Context(), sum.Results[1].ID)
	require.NoError(t, err)
	// The parent's rollout stops mid-task: its turn closed at seq 2.
	require.Equal(t, &eventlog.Parent{ID: sum.Results[0].ID, Seq: 2, Mode: eventlog.ModeChild}, info.Header.Parent)

	alone := newWorld(t)
	alone.write("/src/rollout-2.jsonl", []byte(line("session_meta", `{"id":"F","forked_from_id":"P"}`)))
	r := alone.importAll([]string{"/src/rollout-2.jsonl"}).Results[0]
	info, err = alone.st.Stat(t.Context(), r.ID)
	require.NoError(t, err)
	require.Nil(t, info.Header.Parent)
	require.Equal(t, "P", info.Header.Labels["codex.forkedFromId"])
}

// TestImportKeepsBookkeepingOnlyTrace: a Claude Code file of summaries only
// holds no conversation, but the import is lossless: its session holds the
// summary line as claude/summary.
func TestImportKeepsBookkeepingOnlyTrace(t *testing.T) {
	w := newWorld(t)
	summary := `{"type":"summary","summary":"Old work","leafUuid":"x"}`
	w.write("/src/a.jsonl", []byte(summary+"\n"))
	w.write("/src/b.jsonl", []byte(strings.Join([]string{
		`{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","sessionId":"S","message":{"role":"user","content":"hi"}}`,
		`{"type":"assistant","uuid":"a1","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","model":"m","content":[{"type":"text","text":"hello"}]}}`,
	}, "\n")+"\n"))
	sum := w.importAll([]string{"/src"}, ingest.From("claude"))
	require.Equal(t, []ingest.Status{ingest.Created, ingest.Created}, statuses(sum))
	events := w.events(sum.Results[0].ID)
	require.Len(t, events, 1)
	require.Equal(t, "claude/summary", events[0].Type)
	require.JSONEq(t, summary, string(events[0].Data))
	b := w.events(sum.Results[1].ID)
	var end struct{ Kind string }
	require.Equal(t, "turn/end", b[len(b)-1].Type)
	require.NoError(t, json.Unmarshal(b[len(b)-1].Data, &end))
	require.Equal(t, "completed", end.Kind)
}

func claudeImporter(t *testing.T) importer.Importer {
	t.Helper()
	imp, err := registry().Lookup("claude")
	require.NoError(t, err)
	return imp
}

func registry() *importer.Registry { return formats.Registry() }

// TestImportRealTracesFolder: the whole traces folder imported as a user
// would (no --from: each file's format found by its content, subagents
// with their transcripts): every trace is created, and its session holds
// every prompt, assistant text, call and result of the source (counted
// apart from the importer), no meta record as user/message, every turn
// closed; the folder again creates nothing; a copy of it elsewhere is the
// same sources, unchanged. The default run leaves out traces over 1 MB
// (the 3 MB Claude Code transcript: its subagents then import on their
// own; SESSIONLOG_SWEEPS=full imports it, and TestImportTwiceRealTrace
// imports it with them).
func TestImportRealTracesFolder(t *testing.T) {
	w := newWorld(t)
	dir := tracestest.Dir(t)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err != nil || (fi.Size() > 1<<20 && !sweep.Full()) {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		require.NoError(t, err)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, w.fs.MkdirAll(filepath.Dir("/traces/"+rel), 0o700))
		w.write("/traces/"+rel, b)
		return nil
	}))
	first := w.importAll([]string{"/traces"})
	require.NotEmpty(t, first.Results)
	formats := map[string]int{}
	var all importertest.Counts
	for _, r := range first.Results {
		require.Equal(t, ingest.Created, r.Status, "%s: %s", r.Source, r.Reason)
		formats[r.Format]++
		c := checkConversation(t, w, r)
		all.Prompts, all.Assistant = append(all.Prompts, c.Prompts...), append(all.Assistant, c.Assistant...)
		all.Calls, all.Results = all.Calls+c.Calls, all.Results+c.Results
	}
	require.Len(t, formats, 4, "every foreign format: %v", formats)
	t.Logf("%d sessions: %d prompts, %d assistant texts, %d calls, %d results", len(first.Results), len(all.Prompts), len(all.Assistant), all.Calls, all.Results)
	require.True(t, len(all.Prompts) > 0 && len(all.Assistant) > 0 && all.Calls > 0 && all.Results > 0, "the traces hold conversations")
	n := len(first.Results)
	require.Equal(t, n, w.sessions())

	again := w.importAll([]string{"/traces"})
	require.Equal(t, slices.Repeat([]ingest.Status{ingest.Unchanged}, n), statuses(again), "nothing created the second time")
	copyTree(t, w.fs, "/traces", "/elsewhere/traces")
	moved := w.importAll([]string{"/elsewhere/traces"})
	require.Equal(t, slices.Repeat([]ingest.Status{ingest.Unchanged}, n), statuses(moved), "a copy is the same sources")
	for i := range moved.Results {
		require.Equal(t, first.Results[i].ID, moved.Results[i].ID)
	}
	require.Equal(t, n, w.sessions())
}
