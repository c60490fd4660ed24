package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLifecycle walks one session through new, append, cat, stat, ls and
// verify, checking each output exactly.
func TestLifecycle(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir, "--label", "agent=coder", "--label", "cwd=/src/app")

	input := `{"type":"turn/start","time":1764450000000,"data":{"input":"hi"}}
{"type":"user/message","time":1764450000100,"data":{ "text" : "hi",  "slot":"a" }}
{"type":"assistant/chunk","time":1764450000200,"data":{"text":"He"}}
{"time":1764450000201,"type":"assistant/chunk","data":{"text":"llo"}}
{"type":"assistant/message","time":0,"data":{"text":"Hello\u0021"},"seq":4}
{"type":"turn/end","time":1764450000300}
`
	res := logtool(t, input, "--dir", dir, "append", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"acked":5}`+"\n", res.stdout, "stdin was read in one go: one flush at its end")
	require.Empty(t, res.stderr)

	want := `{"seq":0,"type":"turn/start","time":1764450000000,"data":{"input":"hi"}}
{"seq":1,"type":"user/message","time":1764450000100,"data":{"text":"hi","slot":"a"}}
{"seq":2,"type":"assistant/chunk","time":1764450000200,"data":{"text":"He"}}
{"seq":3,"type":"assistant/chunk","time":1764450000201,"data":{"text":"llo"}}
{"seq":4,"type":"assistant/message","time":0,"data":{"text":"Hello\u0021"}}
{"seq":5,"type":"turn/end","time":1764450000300,"data":null}
`
	for _, arg := range []string{id, path} {
		res = logtool(t, "", "--dir", dir, "cat", "--json", arg)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, want, res.stdout, "cat --json %s", arg)
	}

	res = logtool(t, "", "--dir", dir, "stat", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
	require.Equal(t, 1, strings.Count(res.stdout, "\n"))
	require.Equal(t, id, st["id"])
	require.Equal(t, path, st["path"])
	require.Equal(t, "raw", st["encoding"])
	require.Nil(t, st["parent"])
	require.Equal(t, map[string]any{"agent": "coder", "cwd": "/src/app"}, st["labels"])
	require.EqualValues(t, 6, st["events"])
	require.EqualValues(t, 5, st["lastSeq"])
	require.Equal(t, "turn/end", st["lastType"])
	require.EqualValues(t, 1764450000300, st["lastTime"])
	require.EqualValues(t, fileSize(t, path), st["sizeBytes"])
	require.Equal(t, false, st["openTurn"])
	stop := st["stop"].(map[string]any)
	require.Equal(t, "", stop["kind"], "a turn/end without data has no kind")
	require.EqualValues(t, 5, stop["seq"])
	require.Equal(t, false, stop["verdict"].(map[string]any)["resumable"], "an unknown kind never resumes")
	require.Contains(t, st, "createdAt")

	res = logtoolWords(t, "", "--dir", dir, "stat", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "last      seq 5 turn/end at 2025-11-29T21:00:00.300Z")

	res = logtool(t, "", "--dir", dir, "ls", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	lines := jsonLines(t, res.stdout)
	require.Len(t, lines, 1)
	require.Equal(t, id, lines[0]["id"])
	require.EqualValues(t, 6, lines[0]["events"])

	res = logtool(t, "", "--dir", dir, "verify", "--json", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"path":"`+path+`","id":"`+id+`","ok":true,"events":6,"fileEvents":6,"torn":null,"checkpoints":0,"unchecked":0,"error":null,"protection":{"sealed":false,"redacted":0,"escrowed":0}}`+"\n", res.stdout)

	res = logtoolWords(t, "", "--dir", dir, "verify", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, "ok    "+path+"  "+id+"  6 events\n", res.stdout)
}

func TestCatFilters(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	var in strings.Builder
	for _, typ := range []string{"a", "b", "a", "c", "a"} {
		in.WriteString(`{"type":"` + typ + `","time":1000,"data":{"k":"` + strings.Repeat("x", 150) + `"}}` + "\n")
	}
	require.Equal(t, 0, logtool(t, in.String(), "--dir", dir, "append", id).code)

	seqs := func(out string) []int {
		var got []int
		for _, m := range jsonLines(t, out) {
			got = append(got, int(m["seq"].(float64)))
		}
		return got
	}
	tests := []struct {
		name string
		args []string
		want []int
	}{
		{"all", nil, []int{0, 1, 2, 3, 4}},
		{"from", []string{"--from", "2"}, []int{2, 3, 4}},
		{"to", []string{"--to", "1"}, []int{0, 1}},
		{"range inclusive", []string{"--from", "1", "--to", "3"}, []int{1, 2, 3}},
		{"type", []string{"--type", "a"}, []int{0, 2, 4}},
		{"types", []string{"--type", "b", "--type", "c"}, []int{1, 3}},
		{"type and range", []string{"--type", "a", "--from", "1"}, []int{2, 4}},
		{"past the end", []string{"--from", "9"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir, "cat", "--json", id}, tt.args...)...)
			require.Equal(t, 0, res.code, res.stderr)
			require.Equal(t, tt.want, seqs(res.stdout))
		})
	}

	res := logtoolWords(t, "", "--dir", dir, "cat", "--to", "0", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.True(t, strings.HasPrefix(res.stdout, "     0  1970-01-01T00:00:01.000Z  a  "), res.stdout)
	require.True(t, strings.HasSuffix(res.stdout, "…\n"), "long data is cut: %q", res.stdout)

	for _, args := range [][]string{{"--from", "-1"}, {"--type", "bad type"}} {
		res := logtool(t, "", append([]string{"--dir", dir, "cat", id}, args...)...)
		require.Equal(t, 2, res.code, "%v", args)
		require.True(t, strings.HasPrefix(res.stderr, "logtool: "), res.stderr)
	}
}

func TestLs(t *testing.T) {
	dir := t.TempDir()
	first, _ := newSession(t, dir)
	second, _ := newSession(t, dir, "--label", "title=two")

	res := logtool(t, "", "ls", "--json", dir)
	require.Equal(t, 0, res.code, res.stderr)
	lines := jsonLines(t, res.stdout)
	require.Len(t, lines, 2)
	// Newest first: by createdAt, then by ID, descending (the two may have
	// been created in the same millisecond, by two processes).
	require.ElementsMatch(t, []any{first, second}, []any{lines[0]["id"], lines[1]["id"]})
	require.True(t, lines[0]["createdAt"].(float64) > lines[1]["createdAt"].(float64) ||
		lines[0]["createdAt"] == lines[1]["createdAt"] && lines[0]["id"].(string) > lines[1]["id"].(string), "newest first: %v", lines)
	newest := lines[0]["id"].(string)

	res = logtoolWords(t, "", "--dir", dir, "ls")
	require.Equal(t, 0, res.code, res.stderr)
	rows := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, rows, 3)
	require.True(t, strings.HasPrefix(rows[0], "ID "))
	require.True(t, strings.HasPrefix(rows[1], newest))
	require.Equal(t, newest == second, strings.Contains(rows[1], "title=two"))

	res = logtool(t, "", "--dir", filepath.Join(dir, "none"), "ls")
	require.Equal(t, 2, res.code, "a --dir that is not there is a mistake, not an empty store")
	require.Contains(t, res.stderr, `no store at "`+filepath.Join(dir, "none")+`": no such folder`)
	require.Empty(t, res.stdout)
	require.Equal(t, 2, logtool(t, "", "ls", filepath.Join(dir, "none")).code, "a named folder must exist")
	require.Equal(t, 0, logtool(t, "", "--dir", dir, "ls", "--tree").code)

	writeFile(t, filepath.Join(dir, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"), "not a header\n")
	res = logtool(t, "", "--dir", dir, "ls", "--json")
	require.Equal(t, 1, res.code, "an unreadable session fails the listing")
	require.Len(t, jsonLines(t, res.stdout), 2, "the readable sessions are still listed")
	require.Contains(t, res.stderr, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA")
}

func TestSessionFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	env := func(k string) string {
		if k == envDir {
			return dir
		}
		return ""
	}
	code := run(t.Context(), []string{"new"}, strings.NewReader(""), &out, &errOut, env)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), `"path":"`+dir+string(filepath.Separator))
}

func TestUnknownSession(t *testing.T) {
	dir := t.TempDir()
	const missing = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	tests := []struct {
		name string
		args []string
	}{
		{"cat id", []string{"cat", missing}},
		{"cat path", []string{"cat", filepath.Join(dir, missing+".jsonl")}},
		{"stat", []string{"stat", "--json", missing}},
		{"append", []string{"append", missing}},
		{"verify", []string{"verify", missing}},
		{"not an id", []string{"cat", "hello"}},
		{"lower case id", []string{"cat", strings.ToLower(missing)}},
		{"no argument", []string{"cat"}},
		{"bad flag", []string{"cat", "--nope", missing}},
		{"unknown command", []string{"frobnicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := logtool(t, "", append([]string{"--dir", dir}, tt.args...)...)
			require.Equal(t, 2, res.code, res.stderr)
			require.True(t, strings.HasPrefix(res.stderr, "logtool: "), res.stderr)
			require.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line: %q", res.stderr)
			require.Empty(t, res.stdout)
		})
	}
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	res := logtool(t, "", "--dir", dir, "demo")
	require.Equal(t, 0, res.code, res.stderr)
	for _, want := range []string{
		"killed the agent (SIGKILL) mid-turn",
		"stat: open turn true",
		"resume appended seq",
		"outcome unknown",
		"resume plan: the open turn goes on",
		"turn 2: completed, checkpoint taken", // the resumed turn answers the user
		"rolled back to checkpoint turn-1",
		"forked ",
		"$ logtool ls --tree",
		"fork@",
		"$ logtool verify",
	} {
		require.Contains(t, res.stdout, want)
	}
	require.NotContains(t, res.stdout, "FAIL")
	// The transcript after the rollback ends with the first turn's answer.
	transcript := res.stdout[strings.Index(res.stdout, "$ logtool replay"):strings.Index(res.stdout, "$ logtool verify")]
	require.Contains(t, transcript, "notes.txt lists three tasks.")
	require.NotContains(t, transcript, "welcome")

	res = logtool(t, "", "--dir", dir, "verify", "--json", dir)
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, jsonLines(t, res.stdout), 2)
}
