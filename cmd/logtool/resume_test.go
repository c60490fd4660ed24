package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
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
	require.Contains(t, sal.stderr, "seq 2 lost")
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

// docs/format.md §8: a read-only reader adds the closers of an open turn in memory
// only. replay shows a session whose writer stopped mid-turn as a resume
// would leave it, writes nothing, and leaves a live writer's turn alone.
func TestReplayClosesAnOpenTurnInMemory(t *testing.T) {
	dir := t.TempDir()
	id, path := newSession(t, dir)
	appendEvents(t, dir, id,
		`{"type":"turn/start","time":1}`,
		`{"type":"user/message","time":2,"data":{"text":"delete build/"}}`,
		`{"type":"step/start","time":3}`,
		`{"type":"tool/call","time":4,"data":{"id":"w","name":"rm","args":{},"effect":"write"}}`,
	)
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	res := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"toolCallId":"w"`)
	require.Contains(t, res.stdout, `"seq":4,"role":"tool"`, "the seq a resume would give it")
	require.Contains(t, res.stdout, "outcome unknown")
	require.Contains(t, res.stderr, "shown closed as a resume would close it")
	res = logtool(t, "", "--dir", dir, "replay", "--projection", "agent", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, `"kind":"interrupted"`)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing written")

	for _, args := range [][]string{{"--as-is"}, {"--to", "3"}} {
		res = logtool(t, "", append([]string{"--dir", dir, "replay", "--projection", "transcript", id}, args...)...)
		require.Equal(t, 0, res.code, res.stderr)
		require.NotContains(t, res.stdout, `"toolCallId":"w"`, "%v: the log's own state", args)
	}

	// A writer holds it: the turn is in progress, not interrupted.
	w, err := file.New(afero.NewOsFs(), dir).Open(t.Context(), id, handle.ReadWrite)
	require.NoError(t, err)
	defer w.Close()
	res = logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", id)
	require.Equal(t, 0, res.code, res.stderr)
	require.NotContains(t, res.stdout, `"toolCallId":"w"`)
	require.Contains(t, res.stderr, "a writer holds the session")
}
