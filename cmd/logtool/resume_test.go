package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResumeCommand(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	in := `{"type":"turn/start","data":{}}
{"type":"step/start","data":{}}
{"type":"tool/call","data":{"id":"c1","name":"read_file","args":{},"effect":"read"}}
{"type":"tool/call","data":{"id":"c2","name":"bash","args":{"cmd":"rm x"},"effect":"write"}}
`
	require.Equal(t, 0, logtool(t, in, "--dir", dir, "append", id).code)

	st := logtool(t, "", "--dir", dir, "stat", "--json", id)
	require.Equal(t, 0, st.code, st.stderr)
	require.Contains(t, st.stdout, `"openTurn":true`)

	res := logtool(t, "", "--dir", dir, "resume", id)
	require.Equal(t, 0, res.code, res.stderr)
	var got struct {
		Appended []int64
		Verdict  struct {
			Resumable bool
			Reason    string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, []int64{4, 5, 6, 7}, got.Appended)
	require.True(t, got.Verdict.Resumable)
	require.NotEmpty(t, got.Verdict.Reason)

	cat := logtool(t, "", "--dir", dir, "cat", "--json", "--from", "4", id)
	lines := strings.Split(strings.TrimSpace(cat.stdout), "\n")
	require.Len(t, lines, 4)
	require.Contains(t, lines[0], `"synthetic":true`)
	require.Contains(t, lines[0], "safe to retry")
	require.Contains(t, lines[1], "outcome unknown")
	require.Contains(t, lines[2], `"step/end"`)
	require.Contains(t, lines[3], `"kind":"interrupted"`)

	again := logtool(t, "", "--dir", dir, "resume", id)
	require.Equal(t, 0, again.code)
	require.Contains(t, again.stdout, `"appended":[]`)
	st = logtool(t, "", "--dir", dir, "stat", "--json", id)
	require.Contains(t, st.stdout, `"openTurn":false`)
	require.Contains(t, st.stdout, `"kind":"interrupted"`)
}

func TestRepairAndSalvageCommands(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir)
	in := ""
	for range 6 {
		in += `{"type":"x","data":{"v":1}}` + "\n"
	}
	require.Equal(t, 0, logtool(t, in, "--dir", dir, "append", "--flush-every", "1", id).code)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	damaged := strings.Replace(string(b), `{"seq":2,`, `#"seq":2,`, 1)
	require.NoError(t, os.WriteFile(path, []byte(damaged+`{"seq":6,"ty`), 0o600))

	cat := logtool(t, "", "--dir", dir, "cat", "--json", id)
	require.Equal(t, 1, cat.code, "corruption is never skipped silently")
	sal := logtool(t, "", "--dir", dir, "cat", "--json", "--salvage", id)
	require.Equal(t, 1, sal.code, "what was read is printed, but the log is not clean: %s", sal.stderr)
	require.Len(t, strings.Split(strings.TrimSpace(sal.stdout), "\n"), 5)
	require.Contains(t, sal.stderr, "seqs 2..2 lost")
	require.Contains(t, sal.stderr, "torn tail")

	rep := logtool(t, "", "--dir", dir, "repair", id)
	require.Equal(t, 1, rep.code, "without --salvage a corrupt log is refused")
	rep = logtool(t, "", "--dir", dir, "repair", "--salvage", id)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stdout, `"firstLost":2`)
	require.Contains(t, rep.stdout, `"lastLost":5`)
	v := logtool(t, "", "--dir", dir, "verify", path)
	require.Equal(t, 0, v.code, v.stdout)
}
