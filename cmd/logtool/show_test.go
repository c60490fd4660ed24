package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/app/chatview"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of show")

// checkGolden compares got with the file golden (rewritten with -update).
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "no golden output (go test ./cmd/logtool -run %s -update writes it)", t.Name())
	require.Equal(t, string(want), string(got), "%s differs (review, then regenerate with -update)", golden)
}

// requireFits fails when a line of out is wider than width runes.
func requireFits(t *testing.T, out string, width int) {
	t.Helper()
	for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.LessOrEqual(t, chatview.DisplayWidth(l), width, "line %d is wider than %d columns: %q", i+1, width, l)
	}
}

// storeOfFixtures copies the fixture corpus into a store, each file named
// by its session's ID, so that forks find their parent and show names the
// forks and children of a session.
func storeOfFixtures(t *testing.T) (dir string, ids map[string]string) {
	t.Helper()
	dir, ids = t.TempDir(), map[string]string{}
	files, err := filepath.Glob("../../testdata/sessions/*.jsonl*")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			continue
		}
		res := logtool(t, "", "stat", "--json", f)
		require.Equal(t, 0, res.code, res.stderr)
		id := jsonLines(t, res.stdout)[0]["id"].(string)
		ext := ".jsonl"
		if strings.HasSuffix(f, ".zst") {
			ext = ".jsonl.zst"
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+ext), b, 0o600))
		ids[filepath.Base(f)] = id
	}
	return dir, ids
}

// TestShowFixtures pins show's output for every session of the fixture
// corpus, read from a store (so forks and children are named), and checks
// that it fits 80 columns and has no colour when piped.
func TestShowFixtures(t *testing.T) {
	dir, ids := storeOfFixtures(t)
	require.NotEmpty(t, ids)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range ids {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			res := logtool(t, "", "--dir", dir, "show", ids[name])
			require.Equal(t, 0, res.code, res.stderr)
			require.NotContains(t, res.stdout, "\x1b[", "no colours when piped")
			requireFits(t, res.stdout, 80)
			checkGolden(t, filepath.Join("testdata", "show", name+".golden"), []byte(res.stdout))
		})
	}
}

// TestShowRealTraces imports each real trace and pins what show prints of
// every session it makes. The goldens hold the output's digest and a count
// of each kind of line, not the text: the traces are third-party material
// that stays out of the repository, but any change to the rendering of
// them still fails here, with the counts saying what moved.
func TestShowRealTraces(t *testing.T) {
	t.Parallel()
	// A trajectory has no times: its session is placed at the file's
	// modification time, which importedTraces fixes so that the output is
	// the same anywhere.
	dir, imports := importedTraces(t)
	for i, tr := range foreignTraces() {
		name := tr.from + "-" + filepath.Base(filepath.Dir(tr.file)) + "-" + strings.TrimSuffix(filepath.Base(tr.file), filepath.Ext(tr.file))
		t.Run(name, func(t *testing.T) {
			res := imports[i].res
			require.Equal(t, 0, res.code, res.stderr)
			var summary bytes.Buffer
			lines := imports[i].lines
			// Imported sessions get new IDs: name them by their order.
			var names []string
			for i, l := range lines {
				names = append(names, l.ID, fmt.Sprintf("<session %d>", i))
			}
			anon := strings.NewReplacer(names...)
			for i, l := range lines {
				shown := logtool(t, "", "--dir", dir, "show", l.ID)
				shown.stdout = anon.Replace(shown.stdout)
				require.Equal(t, 0, shown.code, shown.stderr)
				requireFits(t, shown.stdout, 80)
				require.Contains(t, shown.stdout, "── turn 1 ", "a turn is shown")
				fmt.Fprintf(&summary, "session %d: %s\n", i, showSummary(shown.stdout))
				last := logtool(t, "", "--dir", dir, "show", "--turn", "-1", l.ID)
				require.Equal(t, 0, last.code, last.stderr)
				_, body, ok := strings.Cut(anon.Replace(last.stdout), "\n── turn ")
				require.True(t, ok, "the last turn has a header: %s", last.stdout)
				_, body, _ = strings.Cut(body, "\n") // past the header, which is not numbered here
				require.True(t, strings.HasSuffix(shown.stdout, body), "the last turn is the end of the whole")
			}
			checkGolden(t, filepath.Join("testdata", "show", "traces", name+".golden"), summary.Bytes())
		})
	}
}

// showSummary is the digest of show's output and how many lines of each
// label it has.
func showSummary(out string) string {
	counts := map[string]int{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) > 0 && !strings.HasPrefix(l, " ") {
			counts[f[0]]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sha256:%x lines=%d", sha256.Sum256([]byte(out)), strings.Count(out, "\n"))
	for _, k := range []string{"──", "user", "agent", "think", "call", "result", "error", "usage", "stop", "summary", "·"} {
		fmt.Fprintf(&b, " %s=%d", k, counts[k])
	}
	return b.String()
}

// TestShowRange checks --turn, --from and --to and their refusals.
func TestShowRange(t *testing.T) {
	f := "../../testdata/sessions/rollback.jsonl"
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		has   []string
		hasNo []string
	}{
		{"second turn", []string{"--turn", "2"}, 0, []string{"── turn 2 ", "┆ user    Go ahead."}, []string{"turn 1 ", "turn 3 "}},
		{"last turn", []string{"--turn", "-1"}, 0, []string{"── turn ─", "Rename it in pkg/a only."}, []string{"Go ahead."}},
		{"range numbers turns", []string{"--from", "19", "--to", "22"}, 0, []string{"── turn 3 "}, []string{"checkpoint at seq 26"}},
		{"empty range", []string{"--from", "40"}, 0, []string{"no events from seq 40 on"}, nil},
		{"turn zero", []string{"--turn", "0"}, 2, nil, nil},
		{"turn past the end", []string{"--turn", "4"}, 2, nil, nil},
		{"turn with from", []string{"--turn", "1", "--from", "2"}, 2, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := logtool(t, "", append(append([]string{"show"}, tc.args...), f)...)
			require.Equal(t, tc.code, res.code, res.stderr)
			for _, s := range tc.has {
				require.Contains(t, res.stdout, s)
			}
			for _, s := range tc.hasNo {
				require.NotContains(t, res.stdout, s)
			}
		})
	}
}

// TestShowTerminal checks the terminal-only behaviour through the
// SESSIONLOG_TERMINAL override: colours unless NO_COLOR, $COLUMNS, and
// the pager ($PAGER, here a shell command that marks what it was given).
func TestShowTerminal(t *testing.T) {
	f := "../../testdata/sessions/rollback.jsonl"
	runEnv := func(env map[string]string) result {
		var out, errOut bytes.Buffer
		code := run(t.Context(), []string{"show", f}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
		return result{code: code, stdout: out.String(), stderr: errOut.String()}
	}
	res := runEnv(map[string]string{"SESSIONLOG_TERMINAL": "1", "PAGER": "cat"})
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "\x1b[2m┆ \x1b[0m", "abandoned lines dimmed")
	res = runEnv(map[string]string{"SESSIONLOG_TERMINAL": "1", "PAGER": "cat", "NO_COLOR": "1"})
	require.NotContains(t, res.stdout, "\x1b[")
	res = runEnv(map[string]string{"SESSIONLOG_TERMINAL": "1", "PAGER": "cat", "NO_COLOR": "1", "COLUMNS": "50"})
	requireFits(t, res.stdout, 50)
	require.Contains(t, res.stdout, "── turn 1 ─")
	// Output to a non-file writer cannot feed a real pager's terminal, but
	// the pager still runs: it reads show's output on its stdin.
	res = runEnv(map[string]string{"SESSIONLOG_TERMINAL": "1", "PAGER": "sed 's/^/paged: /'", "NO_COLOR": "1"})
	require.Equal(t, 0, res.code, res.stderr)
	require.True(t, strings.HasPrefix(res.stdout, "paged: session 01KB0000000000000000000004"), res.stdout)
	res = runEnv(map[string]string{"SESSIONLOG_TERMINAL": "0", "PAGER": "sed 's/^/paged: /'"})
	require.NotContains(t, res.stdout, "paged: ")
}

// TestReplayIndentsOnATerminal checks that replay's state is indented on
// a terminal and one line when piped, the same JSON either way.
func TestReplayIndentsOnATerminal(t *testing.T) {
	f := "../../testdata/sessions/rollback.jsonl"
	piped := logtool(t, "", "replay", f)
	require.Equal(t, 0, piped.code, piped.stderr)
	require.Equal(t, 1, strings.Count(piped.stdout, "\n"))
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"replay", f}, strings.NewReader(""), &out, &errOut,
		func(k string) string { return map[string]string{"SESSIONLOG_TERMINAL": "1"}[k] })
	require.Equal(t, 0, code, errOut.String())
	require.Greater(t, strings.Count(out.String(), "\n"), 10)
	require.Contains(t, out.String(), "\n  \"")
	var a, b any
	require.NoError(t, json.Unmarshal([]byte(piped.stdout), &a))
	require.NoError(t, json.Unmarshal(out.Bytes(), &b))
	require.Equal(t, a, b)
}

// TestShowSaysWhatWasRedacted: an AWS access key in a tool's output,
// appended through logtool, is redacted at write; show says so beside the
// result, piped and on a terminal, and prints neither the secret nor the
// record's JSON; cat --json keeps the record as data.
func TestShowSaysWhatWasRedacted(t *testing.T) {
	const awsKey = "AKIAQYLPMN5HHHFPZAM2"
	dir := t.TempDir()
	id := toolSession(t, dir, `[default]\naws_access_key_id = `+awsKey+`\n`)
	for _, show := range []result{logtool(t, "", "--dir", dir, "show", id), logtoolWords(t, "", "--dir", dir, "show", id)} {
		require.Equal(t, 0, show.code, show.stderr)
		require.Contains(t, show.stdout, "aws_access_key_id = [REDACTED:aws-access-key-id]\n        redacted: output (aws-access-key-id)\n")
		require.NotContains(t, show.stdout, awsKey)
		require.NotContains(t, show.stdout, "$redacted")
		require.Contains(t, show.stdout, "secrets: 1 string redacted", "show says what protects the session")
		requireFits(t, show.stdout, 80)
	}
	v := logtoolWords(t, "", "--dir", dir, "verify", id)
	require.Contains(t, v.stdout, "; 1 string redacted")
	cat := logtool(t, "", "--dir", dir, "cat", "--json", "--from", "1", id)
	require.Equal(t, 0, cat.code, cat.stderr)
	require.NotContains(t, cat.stdout, awsKey)
	rec := jsonLines(t, cat.stdout)[0]["data"].(map[string]any)["$redacted"]
	require.Equal(t, []any{map[string]any{"path": []any{"output"}, "kinds": []any{"aws-access-key-id"}}}, rec, "cat keeps the record as data")
}

// toolSession appends, through logtool append (redacting at write), a
// tool call and its result with output (a JSON string's body) to a new
// session of dir, and returns its ID.
func toolSession(t *testing.T, dir, output string) string {
	t.Helper()
	id, _ := newSession(t, dir)
	res := logtool(t, `{"type":"tool/call","time":1,"data":{"id":"c1","name":"sh","args":{"cmd":"env"}}}`+"\n"+
		`{"type":"tool/result","time":2,"data":{"id":"c1","output":"`+output+`"}}`+"\n",
		"--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	return id
}
