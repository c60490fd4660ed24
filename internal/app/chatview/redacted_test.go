package chatview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Real-shaped secrets, each matched by one detector of package redact.
const (
	awsKey   = "AKIAQYLPMN5HHHFPZAM2"
	ghToken  = "ghp_R8fK2mQ9xL4vT7nB3cJ6hD1sW5yE0aZuPgXo"
	jwtToken = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

// redacted is data as a writer stores it: redacted at write, with the
// record of what it replaced.
func redacted(t *testing.T, data string) string {
	t.Helper()
	out, changed := redact.New().Data([]byte(data))
	require.True(t, changed, "the sample holds a secret: %s", data)
	return string(out)
}

func TestBlocksSayWhatWasRedacted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string // "type data"; data redacted at write unless raw
		raw    bool     // data as written: a record by hand, or none
		want   []string // each block's Redacted.Words, in order
	}{
		{"no record", []string{`tool/result {"id":"c1","output":"all clean"}`}, true, []string{""}},
		{"a tool's output", []string{`tool/result {"id":"c1","output":"key ` + awsKey + `"}`}, false,
			[]string{"redacted: output (aws-access-key-id)"}},
		{"a nested path", []string{`tool/call {"id":"c1","name":"sh","args":{"env":{"GITHUB_TOKEN":"` + ghToken + `"}}}`}, false,
			[]string{"redacted: args.env.GITHUB_TOKEN (github-token)"}},
		{"an array index", []string{`tool/call {"id":"c1","name":"curl","args":{"argv":["curl","-H","Authorization: Bearer ` + jwtToken + `"]}}`}, false,
			[]string{"redacted: args.argv[2] (jwt)"}},
		{"several kinds in one string", []string{`tool/result {"id":"c1","output":"` + awsKey + ` ` + ghToken + `"}`}, false,
			[]string{"redacted: output (aws-access-key-id, github-token)"}},
		{"places with the same kinds share them", []string{`tool/result {"id":"c1","output":"` + ghToken + `","error":"` + ghToken + `"}`}, false,
			[]string{"redacted: output, error (github-token)"}},
		{"places with other kinds", []string{`tool/call {"id":"c1","name":"sh","args":{"a":"` + ghToken + `","b":"` + awsKey + `"}}`}, false,
			[]string{"redacted: args.a (github-token); args.b (aws-access-key-id)"}},
		{"a redacted key", []string{`tool/call {"id":"c1","name":"http","args":{"headers":{"` + ghToken + `":"1"}}}`}, false,
			[]string{"redacted: a key in args.headers (github-token)"}},
		{"a redacted key at the top", []string{`vendor/x {"` + ghToken + `":"1"}`}, false,
			[]string{"redacted: a key (github-token)"}},
		{"a key of digits is no index", []string{`tool/call {"id":"c1","name":"f","args":{"2":"x","my key":"y"},"$redacted":[{"path":["args","2"],"kinds":["jwt"]},{"path":["args","my key"],"kinds":["jwt"]}]}`}, true,
			[]string{`redacted: args["2"], args["my key"] (jwt)`}},
		{"a record out of step with the data reads digits as an index", []string{`vendor/x {"a":1,"$redacted":[{"path":["gone",3],"kinds":["jwt"]}]}`}, true,
			[]string{"redacted: gone[3] (jwt)"}},
		{"a record with an empty path", []string{`vendor/x {"$redacted":[{"path":[],"kinds":["jwt","jwt"]}]}`}, true,
			[]string{"redacted: the data (jwt)"}},
		{"a writer's own member of that name is content", []string{`vendor/x {"$redacted":"mine"}`}, true, []string{""}},
		{"a streamed message says its chunks'", []string{`step/start`, `assistant/chunk {"text":"` + ghToken + `"}`, `assistant/chunk {"text":" and ` + awsKey + `"}`, `step/end`}, false,
			[]string{"redacted: text (aws-access-key-id, github-token)"}},
		{"a run of records says each place once", []string{`vendor/x {"k":"` + ghToken + `"}`, `vendor/x {"k":"` + awsKey + `"}`, `vendor/x {"j":"` + awsKey + `"}`}, false,
			[]string{"redacted: k (aws-access-key-id, github-token); j (aws-access-key-id)"}},
		{"a turn's input", []string{`turn/start {"input":"use ` + ghToken + `"}`}, false,
			[]string{"redacted: input (github-token)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []eventlog.Event
			for i, l := range tc.events {
				typ, data, _ := strings.Cut(l, " ")
				if data != "" && !tc.raw && strings.Contains(l, `"`) && typ != "step/start" {
					data = redacted(t, data)
				}
				e := eventlog.Event{Seq: int64(i), Type: typ}
				if data != "" {
					e.Data = json.RawMessage(data)
				}
				evs = append(evs, e)
			}
			blocks := build(evs, Options{}, true)
			require.Len(t, blocks, len(tc.want))
			for i, blk := range blocks {
				require.Equal(t, tc.want[i], blk.Redacted.Words(), "block %d", i)
				// The record is said, not shown: no block's content holds it.
				require.NotContains(t, string(blk.Args), redact.RecordKey)
				if blk.Kind == KindOther && tc.want[i] != "" {
					require.NotContains(t, string(blk.Data), redact.RecordKey)
					require.True(t, json.Valid(blk.Data), "%s", blk.Data)
				}
				for _, s := range []string{awsKey, ghToken, jwtToken} {
					require.NotContains(t, blk.Text+string(blk.Args)+string(blk.Data), s)
				}
			}
		})
	}
}

// TestTextSaysWhatWasRedacted: show's lines say it beside the content,
// without the record's JSON.
func TestTextSaysWhatWasRedacted(t *testing.T) {
	evs := events(t,
		`tool/call {"id":"c1","name":"sh","args":{"cmd":"echo hi"}}`,
		redactedLine(t, `tool/result {"id":"c1","output":"aws_access_key_id = `+awsKey+`"}`),
		redactedLine(t, `vendor/x {"token":"`+ghToken+`"}`))
	var out bytes.Buffer
	text := NewText(&out, 80, false)
	for _, blk := range build(evs, Options{}, true) {
		require.NoError(t, text.Write(blk))
	}
	got := out.String()
	require.Contains(t, got, "result  aws_access_key_id = [REDACTED:aws-access-key-id]\n        redacted: output (aws-access-key-id)\n")
	require.Contains(t, got, `·       vendor/x {"token":"[REDACTED:github-token]"}`+"\n        redacted: token (github-token)\n")
	require.NotContains(t, got, redact.RecordKey)
	require.Equal(t, 1, strings.Count(got, "redacted: output"), "one note a block")
}

// redactedLine is an events line with its data redacted at write.
func redactedLine(t *testing.T, l string) string {
	typ, data, _ := strings.Cut(l, " ")
	return typ + " " + redacted(t, data)
}
