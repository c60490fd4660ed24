package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/internal/testkit/tracestest"
)

// tracesDir is the real third-party traces folder beside the repository;
// tests that need it skip when it is absent (fail under
// SESSIONLOG_TRACES=require, as in CI).
func tracesDir(t *testing.T) string { return tracestest.Dir(t) }

// foreignTrace is one real trace and what its import must give.
type foreignTrace struct {
	from string
	file string // under tracesDir
	// sessions is how many sessions the file's import creates (Claude
	// Code: the transcript and its subagents).
	sessions int
}

func foreignTraces() []foreignTrace {
	return []foreignTrace{
		{"claude", "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 3},
		{"codex", "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", 1},
		{"dsh", "dsh-deepseek-harness/advanced-toolchain/session.jsonl", 1},
		{"dsh", "dsh-deepseek-harness/goal-multi-turn-actions/session.jsonl", 1},
		{"dsh", "dsh-deepseek-harness/permission-policy-context/session.jsonl", 1},
		{"swe-agent", "swe-agent/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj", 1},
		{"swe-agent", "swe-agent/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj", 1},
		{"swe-agent", "swe-agent/ctf/web/i_got_id_demo.traj", 1},
	}
}

// imported is one line of import's output.
type imported struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Events  int64  `json:"events"`
	Source  string `json:"source"`
	Status  string `json:"status"`
	Format  string `json:"format"`
	Reason  string `json:"reason"`
	Records int    `json:"records"`
	Kept    int    `json:"kept"`
	Partial int    `json:"partial"`
}

func importLines(t *testing.T, stdout string) []imported {
	t.Helper()
	var out []imported
	for line := range strings.Lines(stdout) {
		var r imported
		require.NoError(t, json.Unmarshal([]byte(line), &r), "line %q", line)
		out = append(out, r)
	}
	return out
}

// TestImportRealTraces imports each real trace (once, into the store the
// trace tests share: importedTraces) and checks the sessions it creates: they verify, stat counts their events, the transcript holds
// the conversation (a user and an assistant message at least, every tool
// message beside its call), the agent state has no call without a result
// and a last turn that completed, and there is one tool/call per tool use
// of the source, counted here by a plain JSON scan.
func TestImportRealTraces(t *testing.T) {
	t.Parallel()
	dir, imports := importedTraces(t)
	for i, tr := range foreignTraces() {
		t.Run(tr.from+"/"+filepath.Base(filepath.Dir(tr.file))+"/"+filepath.Base(tr.file), func(t *testing.T) {
			res := imports[i].res
			require.Equal(t, 0, res.code, res.stderr)
			require.Empty(t, res.stderr)
			lines := imports[i].lines
			require.Len(t, lines, tr.sessions)
			require.Equal(t, imports[i].src, lines[0].Source, "the file's own session comes first")
			for _, l := range lines {
				checkImported(t, dir, tr.from, l)
			}
		})
	}
}

func checkImported(t *testing.T, dir, from string, l imported) {
	t.Helper()
	require.Equal(t, filepath.Join(dir, l.ID+".jsonl"), l.Path)
	require.Positive(t, l.Events)

	v := logtool(t, "", "--dir", dir, "verify", "--json", l.ID)
	require.Equal(t, 0, v.code, v.stdout+v.stderr)
	require.Contains(t, v.stdout, `"ok":true`)

	st := logtool(t, "", "--dir", dir, "stat", "--json", l.ID)
	require.Equal(t, 0, st.code, st.stderr)
	var info struct {
		Events   int64             `json:"events"`
		LastSeq  int64             `json:"lastSeq"`
		Labels   map[string]string `json:"labels"`
		OpenTurn bool              `json:"openTurn"`
		Parent   *struct {
			ID, Mode, Call string
			Seq            int64
		} `json:"parent"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &info))
	require.Equal(t, l.Events, info.Events)
	require.Equal(t, l.Events-1, info.LastSeq)
	require.Equal(t, from, info.Labels["source"])
	require.Equal(t, filepath.Base(l.Source), info.Labels["sourceFile"])
	require.False(t, info.OpenTurn, "every real trace here ends with its turn closed")

	// The transcript: the conversation, each tool message beside its call.
	tr := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", l.ID)
	require.Equal(t, 0, tr.code, tr.stderr)
	require.Empty(t, tr.stderr, "nothing degraded")
	var ts struct {
		Messages []struct {
			Role, Name, ToolCallID string
		} `json:"messages"`
		Degraded []any `json:"degraded"`
	}
	require.NoError(t, json.Unmarshal([]byte(tr.stdout), &ts))
	require.Empty(t, ts.Degraded)
	roles := map[string]int{}
	for _, m := range ts.Messages {
		roles[m.Role]++
		if m.Role == "tool" {
			require.NotEmpty(t, m.Name, "tool message for %s pairs with its call", m.ToolCallID)
		}
	}
	require.GreaterOrEqual(t, roles["assistant"], 1, "%v", roles)
	// The user's words: in the conversation (the transcript starts again
	// at a compaction, and what follows one may be a notification, which
	// no one typed); a compaction sub-run has none, its one prompt being
	// Claude Code's instruction.
	users := 0
	for _, m := range replayMessages(t, dir, "conversation", l.ID) {
		if m.Role == "user" {
			users++
		}
	}
	if strings.HasPrefix(info.Labels["claude.agentId"], "acompact-") {
		require.Zero(t, users, "a compaction sub-run: nobody typed its prompt")
	} else {
		require.GreaterOrEqual(t, users, 1, "a user message in the conversation")
	}

	// The agent state: no call without a result, the last turn completed.
	ag := logtool(t, "", "--dir", dir, "replay", "--projection", "agent", l.ID)
	require.Equal(t, 0, ag.code, ag.stderr)
	var as struct {
		Turns        int            `json:"turns"`
		TurnOpen     bool           `json:"turnOpen"`
		StepOpen     bool           `json:"stepOpen"`
		Steps        int            `json:"steps"`
		PendingCalls map[string]any `json:"pendingCalls"`
		LastStop     *struct{ Kind string }
		Degraded     []any `json:"degraded"`
	}
	require.NoError(t, json.Unmarshal([]byte(ag.stdout), &as))
	require.Empty(t, as.PendingCalls)
	require.Empty(t, as.Degraded)
	require.False(t, as.TurnOpen)
	require.False(t, as.StepOpen)
	require.Positive(t, as.Turns)
	require.Positive(t, as.Steps)
	require.NotNil(t, as.LastStop)
	require.Equal(t, "completed", as.LastStop.Kind)

	// One tool/call per tool use of the source, and one result per call.
	calls := catTypes(t, dir, l.ID, "tool/call")
	results := catTypes(t, dir, l.ID, "tool/result")
	require.Equal(t, sourceToolUses(t, from, l.Source), len(calls), "tool/call events of %s", l.Source)
	ids := map[string]bool{}
	for _, c := range calls {
		id, _ := c["id"].(string)
		require.NotEmpty(t, id)
		require.False(t, ids[id], "call id %s once", id)
		ids[id] = true
	}
	for _, r := range results {
		require.True(t, ids[r["id"].(string)], "result %v for a call", r["id"])
	}

	if info.Parent != nil {
		// A Claude Code subagent: the child of the call that ran it.
		require.Equal(t, "child", info.Parent.Mode)
		parentCall := catRange(t, dir, info.Parent.ID, info.Parent.Seq)
		require.Equal(t, "tool/call", parentCall.Type)
		var d struct{ ID string }
		require.NoError(t, json.Unmarshal(parentCall.Data, &d))
		require.Equal(t, info.Parent.Call, d.ID)
	}
}

type catEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// catTypes returns the data of a session's events of type typ.
func catTypes(t *testing.T, dir, id, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(catJSON(t, dir, "--type", typ, id)) {
		var e catEvent
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		var d map[string]any
		require.NoError(t, json.Unmarshal(e.Data, &d))
		out = append(out, d)
	}
	return out
}

// catRange returns event seq of a session.
func catRange(t *testing.T, dir, id string, seq int64) catEvent {
	t.Helper()
	s := strings.TrimSpace(catJSON(t, dir, "--from", jsonInt(seq), "--to", jsonInt(seq), id))
	var e catEvent
	require.NoError(t, json.Unmarshal([]byte(s), &e))
	return e
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// sourceToolUses counts the tool uses of a trace with a plain JSON scan,
// apart from the converters: Claude Code's tool_use blocks of assistant
// lines, dsh's tool/call rows, SWE-agent's calls of its (non-demo)
// assistant messages, one per action where there are no tool_calls.
func sourceToolUses(t *testing.T, from, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	n := 0
	switch from {
	case "codex":
		for line := range strings.Lines(string(data)) {
			var row struct {
				Type    string
				Payload struct{ Type string }
			}
			require.NoError(t, json.Unmarshal([]byte(line), &row))
			switch row.Payload.Type {
			case "function_call", "custom_tool_call", "web_search_call":
				n++
			}
		}
	case "claude", "dsh":
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var row map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &row))
			if from == "dsh" {
				if row["type"] == "tool/call" {
					n++
				}
				continue
			}
			msg, _ := row["message"].(map[string]any)
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				if row["type"] == "assistant" && b.(map[string]any)["type"] == "tool_use" {
					n++
				}
			}
		}
		require.NoError(t, sc.Err())
	case "swe-agent":
		var traj struct {
			History []struct {
				Role      string `json:"role"`
				IsDemo    bool   `json:"is_demo"`
				Action    string `json:"action"`
				ToolCalls []any  `json:"tool_calls"`
			} `json:"history"`
			Trajectory []any `json:"trajectory"`
		}
		require.NoError(t, json.Unmarshal(data, &traj))
		for _, h := range traj.History {
			switch {
			case h.Role != "assistant" || h.IsDemo:
			case len(h.ToolCalls) > 0:
				n += len(h.ToolCalls)
			case strings.TrimSpace(h.Action) != "":
				n++
			}
		}
		require.Len(t, traj.Trajectory, n, "one trajectory step per action")
	default:
		t.Fatalf("no count for --from %s", from)
	}
	return n
}

// TestImportClaudeSubagents: the subagent the Task call ran is its child;
// the compaction sub-run, which no call names, stands alone; the main
// transcript's compaction is a context/compacted.
func TestImportClaudeSubagents(t *testing.T) {
	t.Parallel()
	dir, imports := importedTraces(t) // the first is the Claude Code transcript
	require.Equal(t, "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", foreignTraces()[0].file)
	res := imports[0].res
	require.Equal(t, 0, res.code, res.stderr)
	lines := imports[0].lines
	require.Len(t, lines, 3)
	main, task, compact := lines[0], lines[1], lines[2]
	require.Equal(t, "agent-a2898e3.jsonl", filepath.Base(task.Source))
	require.Equal(t, "agent-acompact-e1f845.jsonl", filepath.Base(compact.Source))

	tree := logtoolWords(t, "", "--dir", dir, "ls", "--tree")
	require.Equal(t, 0, tree.code, tree.stderr)
	require.Regexp(t, `(?m)^  `+task.ID+` +child@\d+ call toolu_017pLRuPHYTX5t99EnLyV53m `, tree.stdout)
	require.Regexp(t, `(?m)^`+compact.ID+` `, tree.stdout, "the compaction run stands alone")
	require.Regexp(t, `(?m)^`+main.ID+` `, tree.stdout)

	var labels struct{ Labels map[string]string }
	st := logtool(t, "", "--dir", dir, "stat", "--json", task.ID)
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &labels))
	require.Equal(t, "a2898e3", labels.Labels["claude.agentId"])
	require.Equal(t, "4d5611e5-241a-462a-8d15-5122611a9569", labels.Labels["sourceId"])

	require.Len(t, catTypes(t, dir, main.ID, "context/compacted"), 1)
	ts := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", main.ID)
	require.Equal(t, 0, ts.code, ts.stderr)
	require.Contains(t, ts.stdout, `"role":"summary"`)
	usage := catTypes(t, dir, main.ID, "usage")
	require.NotEmpty(t, usage)
	require.Equal(t, "claude-opus-4-6", usage[0]["model"])
	require.NotEmpty(t, catTypes(t, dir, main.ID, "assistant/reasoning"))

	// A subagent file on its own: a session of its own.
	alone := logtool(t, "", "--dir", t.TempDir(), "import", "--from", "claude", task.Source)
	require.Equal(t, 0, alone.code, alone.stderr)
	require.Len(t, importLines(t, alone.stdout), 1)
}

// TestImportForeignDir imports each format's folder of real traces: every
// file of the format, walked recursively, in path order; importing it
// again gives the same events under new IDs. Claude Code's folder is
// imported again, and its 3 MB transcript whole, under
// SESSIONLOG_SWEEPS=full only: by default a copy of the folder holds the
// transcript's first 300 records.
func TestImportForeignDir(t *testing.T) {
	t.Parallel()
	traces := tracesDir(t)
	for _, tt := range []struct {
		from, dir string
		files     []string
	}{
		{"claude", "claude-code-spotter", []string{
			"4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
			"4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl",
			"4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl",
		}},
		{"dsh", "dsh-deepseek-harness", []string{
			"advanced-toolchain/session.jsonl",
			"goal-multi-turn-actions/session.jsonl",
			"permission-policy-context/session.jsonl",
		}},
		{"swe-agent", "swe-agent", []string{
			"ctf/web/i_got_id_demo.traj",
			"gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj",
			"replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj",
		}},
	} {
		t.Run(tt.from, func(t *testing.T) {
			src := filepath.Join(traces, tt.dir)
			if tt.from == "claude" && !sweep.Full() {
				src = cutCopy(t, src, tt.files[0], 300)
			}
			first, second := t.TempDir(), t.TempDir()
			a := logtool(t, "", "--dir", first, "import", "--from", tt.from, src)
			require.Equal(t, 0, a.code, a.stderr)
			la := importLines(t, a.stdout)
			var got []string
			for _, l := range la {
				rel, err := filepath.Rel(src, l.Source)
				require.NoError(t, err)
				got = append(got, filepath.ToSlash(rel))
			}
			require.Equal(t, tt.files, got)
			v := logtool(t, "", "verify", first)
			require.Equal(t, 0, v.code, v.stdout+v.stderr)
			if tt.from == "claude" && !sweep.Full() {
				// Importing it again: the other formats' folders by
				// default; Claude Code's, whose main transcript is 3 MB,
				// under SESSIONLOG_SWEEPS=full.
				return
			}
			b := logtool(t, "", "--dir", second, "import", "--from", tt.from, src)
			require.Equal(t, 0, b.code, b.stderr)
			lb := importLines(t, b.stdout)
			require.Len(t, lb, len(la))
			for i := range la {
				require.NotEqual(t, la[i].ID, lb[i].ID, "a new ID each import")
				require.Equal(t, la[i].Source, lb[i].Source)
				require.Equal(t, catJSON(t, first, la[i].ID), catJSON(t, second, lb[i].ID), "the same events from the same file")
				stA := logtool(t, "", "--dir", first, "stat", "--json", la[i].ID)
				stB := logtool(t, "", "--dir", second, "stat", "--json", lb[i].ID)
				var ia, ib struct {
					CreatedAt int64
					Labels    map[string]string
				}
				require.NoError(t, json.Unmarshal([]byte(stA.stdout), &ia))
				require.NoError(t, json.Unmarshal([]byte(stB.stdout), &ib))
				require.Equal(t, ia, ib, "same createdAt and labels")
			}
		})
	}
}

// TestImportSessionlogDir imports every sessionlog file of a folder under
// its own ID.
func TestImportSessionlogDir(t *testing.T) {
	dir := t.TempDir()
	a, _ := newSession(t, dir, "--label", "k=a")
	appendEvents(t, dir, a, `{"type":"x","time":1}`)
	b, _ := newSession(t, dir, "--encoding", "zstd")
	appendEvents(t, dir, b, `{"type":"y","time":2}`, `{"type":"z","time":3}`)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a log\n")

	other := t.TempDir()
	res := logtool(t, "", "--dir", other, "import", dir)
	require.Equal(t, 0, res.code, res.stderr)
	lines := importLines(t, res.stdout)
	require.Len(t, lines, 2)
	got := map[string]imported{}
	for _, l := range lines {
		got[l.ID] = l
	}
	require.Equal(t, int64(1), got[a].Events)
	require.Equal(t, int64(2), got[b].Events)
	require.Equal(t, filepath.Join(dir, b+".jsonl.zst"), got[b].Source)
	require.Equal(t, catJSON(t, dir, a), catJSON(t, other, a))
	require.Equal(t, catJSON(t, dir, b), catJSON(t, other, b))

	// Into a store that holds one of them: that one is unchanged (its ID
	// is its identity, its log the same), the other created.
	third := t.TempDir()
	require.NoError(t, copyFile(filepath.Join(other, b+".jsonl.zst"), filepath.Join(third, b+".jsonl.zst")))
	res = logtool(t, "", "--dir", third, "import", dir)
	require.Equal(t, 0, res.code, res.stderr)
	status := map[string]string{}
	for _, l := range importLines(t, res.stdout) {
		status[l.ID] = l.Status
	}
	require.Equal(t, map[string]string{a: "created", b: "unchanged"}, status)
	require.Equal(t, catJSON(t, dir, a), catJSON(t, third, a))
}

// TestImportForeignErrors: a file that is not of the format exits 1, a
// missing file and an empty folder exit 2 (each a failed line), an
// unknown --from exits 2 before anything; nothing is left behind.
func TestImportForeignErrors(t *testing.T) {
	traces := tracesDir(t)
	claudeFile := filepath.Join(traces, "claude-code-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
	sweFile := filepath.Join(traces, "swe-agent", "ctf", "web", "i_got_id_demo.traj")
	tmp := t.TempDir()
	text := filepath.Join(tmp, "notes.jsonl")
	writeFile(t, text, "hello, world\n")
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o700))
	bad := filepath.Join(tmp, "bad.traj")
	writeFile(t, bad, `{"history":[]}`)

	for _, tt := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"text as claude", []string{"--from", "claude", text}, 1, "not a Claude Code transcript"},
		{"text as dsh", []string{"--from", "dsh", text}, 1, "not a dsh session log"},
		{"claude as dsh", []string{"--from", "dsh", claudeFile}, 1, "not a dsh session log"},
		{"claude as swe-agent", []string{"--from", "swe-agent", claudeFile}, 1, "not a SWE-agent trajectory"},
		{"swe-agent as claude", []string{"--from", "claude", sweFile}, 1, "not a Claude Code transcript"},
		{"no trajectory", []string{"--from", "swe-agent", bad}, 1, "not a SWE-agent trajectory"},
		{"claude as codex", []string{"--from", "codex", claudeFile}, 1, "not a Codex rollout line"},
		{"missing file", []string{"--from", "claude", filepath.Join(tmp, "none.jsonl")}, 2, "no such file or folder"},
		{"empty folder", []string{"--from", "swe-agent", empty}, 2, "no file to import in"},
		{"empty sessionlog folder", []string{empty}, 2, "no file to import in"},
		{"unknown format", []string{"--from", "word", text}, 2, "want one of"},
		{"no known format", []string{text}, 1, "is none of the formats tried (sessionlog, claude, codex, dsh, swe-agent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			res := logtool(t, "", append([]string{"--dir", dir, "import"}, tt.args...)...)
			require.Equal(t, tt.code, res.code, res.stderr)
			require.Contains(t, res.stderr, tt.msg)
			if tt.name == "unknown format" {
				require.Empty(t, res.stdout, "nothing imported")
			} else {
				out := importLines(t, res.stdout)
				require.Len(t, out, 1)
				require.Equal(t, "failed", out[0].Status)
				require.Contains(t, out[0].Reason, tt.msg)
			}
			entries, err := os.ReadDir(dir)
			if !os.IsNotExist(err) {
				require.NoError(t, err)
			}
			for _, e := range entries {
				require.False(t, strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".zst"), "no session left: %s", e.Name())
			}
		})
	}
	require.Equal(t, []string{"sessionlog", "claude", "codex", "dsh", "swe-agent"}, importFormats())
}

// Regression: a missing path among several aborted the whole import
// ("nothing to import: … no file or folder"). It fails on its own line,
// with its reason, the others are imported, and the exit status is the
// missing path's (2).
func TestImportSomePathsMissing(t *testing.T) {
	file := filepath.Join(tracesDir(t), "dsh-deepseek-harness", "advanced-toolchain", "session.jsonl")
	missing := filepath.Join(t.TempDir(), "gone.jsonl")
	dir := t.TempDir()
	res := logtool(t, "", "--dir", dir, "import", missing, file)
	require.Equal(t, 2, res.code, res.stderr)
	lines := importLines(t, res.stdout)
	require.Len(t, lines, 2)
	require.Equal(t, "failed", lines[0].Status)
	require.Equal(t, missing, lines[0].Source)
	require.Equal(t, missing+": no such file or folder", lines[0].Reason)
	require.Equal(t, "created", lines[1].Status)
	require.Contains(t, res.stderr, "logtool: import: "+missing+": no such file or folder: not imported")
	v := logtool(t, "", "verify", dir)
	require.Equal(t, 0, v.code, v.stdout+v.stderr)
}

// cutCopy copies the files of folder dir (recursively) into a temporary
// folder, but the file main, of which only its first n lines, and returns
// the copy.
func cutCopy(t *testing.T, dir, main string, n int) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if filepath.ToSlash(rel) == main {
			b = bytes.Join(bytes.SplitAfter(b, []byte("\n"))[:n], nil)
		}
		if err := os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	}))
	return to
}
