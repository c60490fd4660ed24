package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// damagedTraces are real JSONL traces to damage: format and file.
var damagedTraces = []struct {
	from, file string
	large      bool // damaged under SESSIONLOG_SWEEPS=full only
}{
	{"claude", "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", true},
	{"claude", "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl", false},
	{"codex", "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", false},
	{"dsh", "dsh-deepseek-harness/advanced-toolchain/session.jsonl", false},
}

// sessionRecords rebuilds the source records a session of format from
// holds, in order (importer.RecordOf over cat --json).
func sessionRecords(t *testing.T, dir, from, id string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(catJSON(t, dir, id)) {
		var e catEvent
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if r, ok := importer.RecordOf(from, eventlog.Event{Type: e.Type, Data: e.Data}); ok {
			out = append(out, string(r))
		}
	}
	return out
}

// wantRecords are the records of src (importer.Records of the format).
func wantRecords(t *testing.T, from string, src []byte) []string {
	t.Helper()
	imp, err := formats.Registry().Lookup(from)
	require.NoError(t, err)
	var out []string
	require.NoError(t, imp.Records(bytes.NewReader(src), func(r json.RawMessage) error {
		out = append(out, string(r))
		return nil
	}))
	return out
}

// TestImportDamage imports damaged copies of real traces: a torn last line
// is left out and reported (exit 0); a garbage middle line stops the
// import before it, the records before it kept in a verified session
// labelled partial, with a message naming file, line and what to do (exit
// 1); --skip-bad imports past it, reporting it (exit 0). Each format by
// default, Claude Code's in its subagent transcript; its 3 MB main
// transcript too under SESSIONLOG_SWEEPS=full (three imports of it cost
// the race detector ten seconds).
func TestImportDamage(t *testing.T) {
	t.Parallel()
	traces := tracesDir(t)
	for _, tr := range damagedTraces {
		if tr.large && !sweep.Full() {
			continue
		}
		t.Run(tr.from+"/"+filepath.Base(tr.file), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(traces, tr.file))
			require.NoError(t, err)
			lines := bytes.SplitAfter(src, []byte("\n"))
			if len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			require.Greater(t, len(lines), 4)
			all := wantRecords(t, tr.from, src)
			name := filepath.Base(tr.file)
			if tr.from == "codex" {
				name = "rollout-damaged.jsonl"
			}

			t.Run("torn last line", func(t *testing.T) {
				tmp := t.TempDir()
				last := lines[len(lines)-1]
				file := filepath.Join(tmp, name)
				torn := append(bytes.Join(lines[:len(lines)-1], nil), last[:len(last)/2]...)
				require.NoError(t, os.WriteFile(file, torn, 0o600))
				dir := t.TempDir()
				res := logtool(t, "", "--dir", dir, "import", "--from", tr.from, file)
				require.Equal(t, 0, res.code, res.stderr)
				require.Contains(t, res.stderr, file+": line "+strconv.Itoa(len(lines))+": torn last line")
				out := importLines(t, res.stdout) // the file's own session first
				require.Equal(t, all[:len(all)-1], sessionRecords(t, dir, tr.from, out[0].ID), "every record but the torn one")
			})

			bad := len(lines) / 2 // a line number, from 1
			garbage := append(append(append([]byte{}, bytes.Join(lines[:bad-1], nil)...), "{garbage\n"...), bytes.Join(lines[bad-1:], nil)...)
			t.Run("garbage middle line", func(t *testing.T) {
				tmp := t.TempDir()
				file := filepath.Join(tmp, name)
				require.NoError(t, os.WriteFile(file, garbage, 0o600))
				dir := t.TempDir()
				res := logtool(t, "", "--dir", dir, "import", "--from", tr.from, file)
				require.Equal(t, 1, res.code, res.stderr)
				require.Contains(t, res.stderr, file+": line "+strconv.Itoa(bad)+":")
				require.Contains(t, res.stderr, "--skip-bad")
				out := importLines(t, res.stdout)
				require.Equal(t, bad, out[0].Partial)
				require.Equal(t, all[:bad-1], sessionRecords(t, dir, tr.from, out[0].ID), "the records before the bad line")
				st := logtool(t, "", "--dir", dir, "stat", "--json", out[0].ID)
				require.Contains(t, st.stdout, `"partial":"`+strconv.Itoa(bad)+`"`)
				v := logtool(t, "", "--dir", dir, "verify", out[0].ID)
				require.Equal(t, 0, v.code, v.stdout+v.stderr)

				res = logtool(t, "", "--dir", t.TempDir(), "import", "--skip-bad", "--from", tr.from, file)
				require.Equal(t, 0, res.code, res.stderr)
				require.Contains(t, res.stderr, file+": line "+strconv.Itoa(bad)+": ")
				require.Contains(t, res.stderr, "skipped (--skip-bad)")
				out = importLines(t, res.stdout)
				require.Zero(t, out[0].Partial)
				require.Equal(t, len(all), out[0].Kept, "every record but the garbage")
			})
		})
	}
}

// TestImportFolderWithBadFile: a folder import imports every good file,
// reports each bad one, exits 1, and leaves nothing behind for the files
// it refused; a copy of a file under another name is the same source:
// unchanged.
func TestImportFolderWithBadFile(t *testing.T) {
	t.Parallel()
	traces := tracesDir(t)
	for _, tc := range []struct{ from, good, ext string }{
		{"swe-agent", "swe-agent/ctf/web/i_got_id_demo.traj", ".traj"},
		{"dsh", "dsh-deepseek-harness/advanced-toolchain/session.jsonl", ".jsonl"},
		{"claude", "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl", ".jsonl"},
		{"codex", "codex/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", ".jsonl"},
	} {
		t.Run(tc.from, func(t *testing.T) {
			src := t.TempDir()
			require.NoError(t, copyFile(filepath.Join(traces, tc.good), filepath.Join(src, "rollout-a"+tc.ext)))
			writeFile(t, filepath.Join(src, "rollout-b"+tc.ext), "not a trace at all\n")
			require.NoError(t, copyFile(filepath.Join(traces, tc.good), filepath.Join(src, "rollout-c"+tc.ext)))
			dir := t.TempDir()
			res := logtool(t, "", "--dir", dir, "import", "--from", tc.from, src)
			require.Equal(t, 1, res.code, res.stderr)
			require.Contains(t, res.stderr, filepath.Join(src, "rollout-b"+tc.ext)+": ")
			require.Contains(t, res.stderr, "not imported (nothing kept for it)")
			out := importLines(t, res.stdout)
			require.Len(t, out, 3, "every file, the one after the bad one too")
			require.Equal(t, []string{"created", "failed", "unchanged"}, []string{out[0].Status, out[1].Status, out[2].Status})
			require.Equal(t, out[0].ID, out[2].ID, "the copy is the same session")
			ids := map[string]bool{}
			for _, o := range out {
				if o.Status == "failed" {
					continue
				}
				ids[o.ID] = true
				v := logtool(t, "", "--dir", dir, "verify", o.ID)
				require.Equal(t, 0, v.code, v.stdout+v.stderr)
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				id, _, _ := strings.Cut(e.Name(), ".")
				require.True(t, ids[id] || e.Name() == ".cache", "only the good files' sessions: %s", e.Name())
			}
		})
	}
}

// TestImportProgress: with --progress always, stderr shows the progress
// line and the summary table (source bytes, what the session takes in the
// store and its encoding, events, records kept); piped (auto), nothing.
//
// Regression: the table showed base names only (three rows read
// session.jsonl) and read and compressed each imported file again to
// size it. A file found under a folder shows its path relative to the
// folder; the stored bytes are the store's own figure (stat's sizeBytes).
func TestImportProgress(t *testing.T) {
	t.Parallel()
	file := filepath.Join(tracesDir(t), "codex", "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")
	dir := t.TempDir()
	res := logtool(t, "", "--dir", dir, "import", "--from", "codex", "--progress", "always", file)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, "\rimport 1/1 files (1 created, 0 appended, 0 unchanged, 0 failed) [")
	require.Regexp(t, `source bytes +stored bytes +encoding +events +kept +records +status +file`, res.stderr)
	id := importLines(t, res.stdout)[0].ID
	var st struct{ SizeBytes int64 }
	require.NoError(t, json.Unmarshal([]byte(logtool(t, "", "--dir", dir, "stat", "--json", id).stdout), &st))
	require.Regexp(t, fmt.Sprintf(`\n +747877 +%d +raw +\d+ +386 +386 +created +%s`, st.SizeBytes, regexp.QuoteMeta(file)), res.stderr)
	require.Regexp(t, fmt.Sprintf(`\n +747877 +%d +\d+ +386 +386 +1 sessions`, st.SizeBytes), res.stderr)
	require.Contains(t, res.stderr, "\n1 created, 0 appended, 0 unchanged, 0 failed\n")

	folder := filepath.Join(tracesDir(t), "dsh-deepseek-harness")
	res = logtool(t, "", "--dir", t.TempDir(), "import", "--progress", "always", "--encoding", "zstd", folder)
	require.Equal(t, 0, res.code, res.stderr)
	for _, name := range []string{"advanced-toolchain", "goal-multi-turn-actions", "permission-policy-context"} {
		require.Regexp(t, ` zstd +\d+ +\d+ +\d+ +created +`+name+`/session\.jsonl\s*\n`, res.stderr)
	}

	res = logtool(t, "", "--dir", t.TempDir(), "import", "--from", "codex", file)
	require.Equal(t, 0, res.code, res.stderr)
	require.Empty(t, res.stderr, "piped: no progress")

	res = logtool(t, "", "--dir", t.TempDir(), "import", "--from", "codex", "--progress", "sometimes", file)
	require.Equal(t, 2, res.code)
}

// TestConversationOfRealTraces: the conversation view of each imported
// real trace holds, in order, every user and assistant message and every
// compaction summary of the session (which its import test matches with the
// source), across compactions: where the transcript starts again from a
// summary, the conversation keeps what came before it.
func TestConversationOfRealTraces(t *testing.T) {
	t.Parallel()
	dir, imports := importedTraces(t)
	for i, tr := range foreignTraces() {
		t.Run(tr.from+"/"+filepath.Base(tr.file), func(t *testing.T) {
			res := imports[i].res
			require.Equal(t, 0, res.code, res.stderr)
			for _, l := range imports[i].lines {
				var want []string
				for line := range strings.Lines(catJSON(t, dir, "--type", "user/message", "--type", "assistant/message", "--type", "context/compacted", l.ID)) {
					var e catEvent
					require.NoError(t, json.Unmarshal([]byte(line), &e))
					var d struct{ Text, Summary string }
					require.NoError(t, json.Unmarshal(e.Data, &d))
					role := map[string]string{"user/message": "user", "assistant/message": "assistant", "context/compacted": "summary"}[e.Type]
					if d.Text != "" || role == "summary" {
						want = append(want, role+": "+d.Text+d.Summary)
					}
				}
				got := texts(replayMessages(t, dir, "conversation", l.ID))
				require.Equal(t, want, got, "%s: every message, in order", l.Source)
				if strings.Contains(strings.Join(want, "\n"), "\nsummary: ") {
					transcript := texts(replayMessages(t, dir, "transcript", l.ID))
					require.Less(t, len(transcript), len(got), "the transcript starts again at a compaction")
					require.Equal(t, got[len(got)-len(transcript):], transcript, "the conversation ends as the transcript does")
				}
			}
		})
	}
}

// texts are the messages with text (and the summaries), as "role: text".
func texts(ms []replayMessage) []string {
	var out []string
	for _, m := range ms {
		if m.Role != "tool" && (m.Text != "" || m.Role == "summary") {
			out = append(out, m.Role+": "+m.Text)
		}
	}
	return out
}

type replayMessage struct {
	Role, Text string
}

func replayMessages(t *testing.T, dir, projection, id string) []replayMessage {
	t.Helper()
	res := logtool(t, "", "--dir", dir, "replay", "--projection", projection, id)
	require.Equal(t, 0, res.code, res.stderr)
	var st struct{ Messages []replayMessage }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
	return st.Messages
}

// TestImportDamagedTrajectory: a .traj is one JSON document, so a torn or
// garbled copy is not a trajectory: refused with the file named, exit 1,
// nothing kept.
func TestImportDamagedTrajectory(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(tracesDir(t), "swe-agent", "ctf", "web", "i_got_id_demo.traj"))
	require.NoError(t, err)
	for name, damaged := range map[string][]byte{
		"torn":    src[:len(src)/2],
		"garbage": bytes.Replace(src, []byte(`"history":`), []byte(`{garbage "history":`), 1),
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "run.traj")
			require.NoError(t, os.WriteFile(file, damaged, 0o600))
			dir := t.TempDir()
			res := logtool(t, "", "--dir", dir, "import", "--from", "swe-agent", file)
			require.Equal(t, 1, res.code, res.stderr)
			require.Contains(t, res.stderr, file+": not a SWE-agent trajectory")
			require.Contains(t, res.stderr, "not imported (nothing kept for it)")
			out := importLines(t, res.stdout)
			require.Len(t, out, 1)
			require.Equal(t, "failed", out[0].Status)
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				require.Equal(t, ".cache", e.Name(), "nothing left for the refused file")
			}
		})
	}
}
