package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The acceptance: replay of a session with a rollback shows the
// conversation without the abandoned branch, while cat shows every event;
// verify checks every digest and catches a one-character change.
func TestCheckpointRollbackReplayVerify(t *testing.T) {
	for _, enc := range []string{"raw", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			dir := t.TempDir()
			id, path := newSession(t, dir, "--encoding", enc)
			appendLines := func(lines ...string) {
				t.Helper()
				res := logtool(t, strings.Join(lines, "\n")+"\n", "--dir", dir, "append", id)
				require.Equal(t, 0, res.code, res.stderr)
			}
			appendLines(
				`{"type":"turn/start","time":1,"data":{}}`,
				`{"type":"user/message","time":2,"data":{"text":"first question"}}`,
				`{"type":"assistant/message","time":3,"data":{"text":"first answer"}}`,
				`{"type":"turn/end","time":4,"data":{"kind":"completed"}}`,
			)
			cp := logtool(t, "", "--dir", dir, "checkpoint", "--label", "good", id)
			require.Equal(t, 0, cp.code, cp.stderr)
			var info struct {
				Seq   int64
				Log   string
				State struct{ Projection, Digest string }
			}
			require.NoError(t, json.Unmarshal([]byte(cp.stdout), &info))
			require.Equal(t, int64(4), info.Seq)
			require.Equal(t, "agent/v1", info.State.Projection)

			appendLines(
				`{"type":"turn/start","time":5,"data":{}}`,
				`{"type":"user/message","time":6,"data":{"text":"a wrong turn"}}`,
				`{"type":"assistant/message","time":7,"data":{"text":"abandoned answer"}}`,
			)
			rb := logtool(t, "", "--dir", dir, "rollback", "--checkpoint", "good", "--reason", "wrong turn", id)
			require.Equal(t, 0, rb.code, rb.stderr)
			require.JSONEq(t, `{"seq":8,"to":4,"label":"good"}`, rb.stdout)
			appendLines(
				`{"type":"turn/start","time":9,"data":{}}`,
				`{"type":"user/message","time":10,"data":{"text":"second question"}}`,
			)

			rep := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", id)
			require.Equal(t, 0, rep.code, rep.stderr)
			require.Contains(t, rep.stdout, "first question")
			require.Contains(t, rep.stdout, "second question")
			require.NotContains(t, rep.stdout, "abandoned answer")
			require.NotContains(t, rep.stdout, "a wrong turn")

			to := logtool(t, "", "--dir", dir, "replay", "--projection", "transcript", "--to", "7", id)
			require.Equal(t, 0, to.code, to.stderr)
			require.Contains(t, to.stdout, "abandoned answer", "before the rollback the branch was live")

			cat := logtool(t, "", "--dir", dir, "cat", "--json", id)
			require.Equal(t, 0, cat.code)
			require.Contains(t, cat.stdout, "abandoned answer", "cat shows every event")
			require.Len(t, strings.Split(strings.TrimSpace(cat.stdout), "\n"), 11)

			cps := logtool(t, "", "--dir", dir, "checkpoints", "--json", id)
			require.Equal(t, 0, cps.code, cps.stderr)
			require.Contains(t, cps.stdout, `"label":"good"`)
			require.Contains(t, cps.stdout, `"live":true`)

			v := logtool(t, "", "--dir", dir, "verify", "--json", path)
			require.Equal(t, 0, v.code, v.stdout)
			require.Contains(t, v.stdout, `"checkpoints":1`)
			require.Contains(t, v.stdout, `"unchecked":0`)

			rbBad := logtool(t, "", "--dir", dir, "rollback", "--to", "99", id)
			require.Equal(t, 2, rbBad.code)
			rbNone := logtool(t, "", "--dir", dir, "rollback", "--checkpoint", "nope", id)
			require.NotEqual(t, 0, rbNone.code)
		})
	}
}
