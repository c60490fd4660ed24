package dsh_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/dsh"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

func TestParse(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":0,"id":"abc","createdAt":1000,"cwd":"/w","delegationDepth":0}`,
		`{"type":"turn/start","seq":0,"time":1001,"data":{"turn":1}}`,
		`{"type":"user/message","seq":1,"time":1002,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}}`,
		`{"type":"session/title","seq":2,"time":1002,"data":{"title":"Say hi"}}`,
		`{"type":"step/start","seq":3,"time":1003,"data":{"turn":1,"step":1}}`,
		`{"type":"request/header","seq":4,"time":1003,"data":{"header":{"config":{"model":"ds-v4"}}}}`,
		`{"type":"text-chunks","seq0":5,"time0":1004,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["H","e","y"]}}`,
		`{"type":"assistant/message","seq":8,"time":1010,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"reasoning","text":"greet"},{"type":"text","text":"Hey"},{"type":"tool-call","id":"c1","name":"sh","arguments":"{}"}],"source":{"model":"ds-v4"}},"usage":{"inputTokens":5,"outputTokens":2,"cacheReadTokens":100,"reasoningTokens":1}}}`,
		`{"type":"tool/call","seq":9,"time":1011,"data":{"turn":1,"step":1,"callId":"c1","name":"sh","arguments":"{\"cmd\":\"ls\"}"}}`,
		`{"type":"tool/result","seq":10,"time":1012,"data":{"message":{"source":{"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"a.go"}],"isError":false}]}}}`,
		`{"type":"step/end","seq":11,"time":1013,"data":{"turn":1,"step":1}}`,
		`{"type":"turn/end","seq":12,"time":1013,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
	}, "\n")
	s, err := dsh.Parse(strings.NewReader(in), "/snap/session.jsonl")
	require.NoError(t, err)
	var got []string
	for i, e := range s.Events {
		require.Equal(t, int64(i), e.Seq)
		got = append(got, importertest.Brief(dsh.Name, e))
	}
	require.Equal(t, []string{
		`dsh/session @`,
		`turn/start {"turn":1,"source":{"line":2,"record":@}}`,
		`user/message {"text":"hi","source":{"line":3,"record":@}}`,
		`dsh/session/title @`,
		`step/start {"turn":1,"step":1,"source":{"line":5,"record":@}}`,
		`dsh/request/header @`,
		`assistant/chunk {"text":"H","source":{"line":7,"record":@}}`,
		`assistant/chunk {"text":"e"}`, // a packed row's later deltas: their data alone
		`assistant/chunk {"text":"y"}`,
		`assistant/reasoning {"text":"greet","source":{"line":8,"record":@}}`,
		`assistant/message {"text":"Hey","source":{"line":8}}`,
		`usage {"inputTokens":105,"outputTokens":2,"cachedTokens":100,"model":"ds-v4","source":{"line":8}}`,
		`tool/call {"id":"c1","name":"sh","args":{"cmd":"ls"},"source":{"line":9,"record":@}}`,
		`tool/result {"id":"c1","output":"a.go","source":{"line":10,"record":@}}`,
		`step/end {"turn":1,"step":1,"source":{"line":11,"record":@}}`,
		`turn/end {"kind":"completed","source":{"line":12,"record":@}}`,
	}, got)
	require.Equal(t, int64(1000), s.CreatedAt)
	require.Equal(t, int64(1010), s.Events[10].Time)
	require.Equal(t, map[string]string{
		"source": "dsh", "sourceFile": "session.jsonl", "sourceId": "abc", "cwd": "/w",
		"dsh.version": "0", "dsh.delegationDepth": "0", "model": "ds-v4", "title": "Say hi",
	}, s.Labels)
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":  ``,
		"claude": `{"type":"user","message":{"content":"hi"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := dsh.Parse(strings.NewReader(in), "s.jsonl")
			require.Error(t, err)
			require.True(t, errors.Is(err, importer.ErrFormat), "%v", err)
		})
	}
	// A bad row after the header cuts the session before it.
	s, err := dsh.Parse(strings.NewReader("{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"a\",\"seq\":1}\n"), "s.jsonl")
	require.NoError(t, err)
	require.ErrorIs(t, s.Partial, importer.ErrFormat)
	require.Contains(t, s.Partial.Error(), "line 2: seq 1, want 0")
}

// Regression: a usage's counts were summed unchecked, so a sum beyond int64
// wrapped to a negative inputTokens, and negative counts were kept. Such a
// usage now makes no usage event (the message keeps it in its data).
func TestUsageOutOfRange(t *testing.T) {
	for name, usage := range map[string]string{
		"sum beyond int64": `{"inputTokens":9223372036854775807,"outputTokens":1,"cacheReadTokens":1}`,
		"negative input":   `{"inputTokens":-200,"outputTokens":1,"cacheReadTokens":100}`,
		"negative output":  `{"inputTokens":5,"outputTokens":-1}`,
	} {
		t.Run(name, func(t *testing.T) {
			in := `{"type":"session","version":0,"id":"abc","createdAt":1000}` + "\n" +
				`{"type":"assistant/message","data":{"message":{"content":[{"type":"text","text":"Hi"}]},"usage":` + usage + `}}`
			s, err := dsh.Parse(strings.NewReader(in), "s.jsonl")
			require.NoError(t, err)
			require.Len(t, s.Events, 2, "the header and the message, no usage")
			require.Equal(t, "assistant/message", s.Events[1].Type)
			require.Equal(t, `assistant/message {"text":"Hi","source":{"line":2,"record":@}}`, importertest.Brief(dsh.Name, s.Events[1]))
		})
	}
}

// Regression: call arguments holding JSON nested as deeply as JSON may be
// nest one level deeper once in "args": the import failed with an error
// that was not ErrFormat. It is a format error naming the line now.
func TestDeepArgs(t *testing.T) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	in := `{"type":"session","version":0,"id":"abc","createdAt":1000}` + "\n" +
		`{"type":"tool/call","data":{"callId":"c","name":"f","arguments":"` + deep + `"}}`
	s, err := dsh.Parse(strings.NewReader(in), "s.jsonl")
	require.NoError(t, err)
	require.ErrorIs(t, s.Partial, importer.ErrFormat)
	require.Contains(t, s.Partial.Error(), "line 2: ")
}

// Regression: every dsh user/message became a user/message, whoever
// produced it, so a goal round, a plugin's runtime-context snapshot or
// skill catalog read as prompts. dsh's own data.source.kind says who: only
// "user" is the person; a producer's message is context, a compaction
// checkpoint the summary the history is replaced by, and a slash command
// (command/run, "a human-typed line") is the person's input.
func TestSourceKinds(t *testing.T) {
	msg := func(text, src string) string {
		return `{"type":"user/message","data":{"role":"user","content":[{"type":"text","text":"` + text + `"}],"source":` + src + `}}`
	}
	in := strings.Join([]string{
		`{"type":"session","version":0,"id":"abc","createdAt":1000}`,
		`{"type":"command/run","data":{"commandId":"c1","name":"goal","args":" two turns \n","source":{"kind":"user"}}}`,
		`{"type":"command/done","data":{"commandId":"c1","kind":"success","text":"Goal created"}}`,
		msg("typed", `{"kind":"user","rpcId":"r1"}`),
		msg("<goal_round>", `{"kind":"goal","goalId":"g","revision":1,"round":1}`),
		msg("Current runtime context.", `{"kind":"plugin","plugin":"@monotykamary/dsh-system-prompt","form":"snapshot","sections":[]}`),
		msg("skills", `{"kind":"plugin","plugin":"dsh-tool-skill"}`),
		msg("report", `{"kind":"subagent-report","form":"relay","senderSessionId":"s2"}`),
		msg("Summary so far", `{"kind":"plugin","plugin":"compact","compactionId":"k"}`),
	}, "\n")
	s, err := dsh.Parse(strings.NewReader(in), "session.jsonl")
	require.NoError(t, err)
	var got []string
	for _, e := range s.Events[1:] {
		got = append(got, importertest.Brief(dsh.Name, e))
	}
	require.Equal(t, []string{
		`user/message {"text":"/goal two turns","source":{"line":2,"record":@}}`,
		`dsh/command/done @`,
		`user/message {"text":"typed","source":{"line":4,"record":@}}`,
		`context/message {"text":"<goal_round>","kind":"goal","role":"user","source":{"line":5,"record":@}}`,
		`context/message {"text":"Current runtime context.","kind":"plugin","plugin":"@monotykamary/dsh-system-prompt","form":"snapshot","role":"user","source":{"line":6,"record":@}}`,
		`context/message {"text":"skills","kind":"plugin","plugin":"dsh-tool-skill","role":"user","source":{"line":7,"record":@}}`,
		`context/message {"text":"report","kind":"subagent-report","form":"relay","role":"user","source":{"line":8,"record":@}}`,
		`context/compacted {"summary":"Summary so far","source":{"line":9,"record":@}}`,
	}, got)
}

// Regression: a row the builder drops (here one holding invalid UTF-8 in
// a key sessionlog has no place for, which the row an event carries may
// not hold) took back its events while the import kept what the row did
// to its turn state, seqs and labels: a step its step/end closed stayed
// closed, so the closers ended the turn inside the step; a call it made
// got a synthetic result; a title it told stayed set. They are put back
// as the row found them: a session cut at the row is that of the rows
// before it, and one made past it (SkipBad) that of the log without it.
func TestDroppedRowLeavesNoTrace(t *testing.T) {
	bad := func(row string) string { return strings.TrimSuffix(row, "}") + ",\"surfaceOp\":\"\x87\"}" }
	for _, tc := range []struct {
		name string
		row  string
	}{
		{"a step/end", `{"type":"step/end","data":{"turn":1,"step":1}}`},
		{"a call", `{"type":"tool/call","data":{"callId":"c","name":"f","arguments":"{}"}}`},
		{"a title", `{"type":"session/title","data":{"title":"T"}}`},
		{"untimed", `{"type":"session/note","data":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(strings.Join([]string{
				`{"type":"session","version":0,"id":"abc","createdAt":1000}`,
				`{"type":"turn/start","time":2000,"data":{"turn":1}}`,
				`{"type":"step/start","data":{"turn":1,"step":1}}`,
				bad(tc.row),
				`{"type":"session/note","data":{}}`,
			}, "\n") + "\n")
			importertest.CheckDroppedLine(t, dsh.New(), in, "/snap/session.jsonl", 4, checkClosers, dsh.NewBlankAsSkipped())
		})
	}
}

// Regression: a dsh row numbers its events, and a row SkipBad went past
// left the next row's seq not the one the parser expected, so every row
// after it was skipped too. The rows after a skipped one are numbered on
// from the last event kept, the source's seqs checked to go on past the
// gap: one bad row is one skipped row.
func TestSkipBadGoesOnPastANumberedRow(t *testing.T) {
	const head = `{"type":"session","version":0,"id":"abc","createdAt":1000}`
	row := func(seq int, typ string) string {
		return fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":{"turn":1}}`, typ, seq, 2000+seq)
	}
	droppedKey := func(r string) string { return strings.TrimSuffix(r, "}") + ",\"surfaceOp\":\"\x87\"}" }
	for _, tc := range []struct {
		name    string
		rows    []string
		skipped []int // lines
		kept    []int // lines whose rows are in the session
	}{
		{"refused by the converter", []string{row(0, "turn/start"), row(1, "session/note"), `{"type":"","seq":2}`, row(3, "session/note"), row(4, "turn/end")},
			[]int{4}, []int{2, 3, 5, 6}},
		{"dropped by the builder", []string{row(0, "turn/start"), row(1, "session/note"), droppedKey(row(2, "session/note")), row(3, "session/note"), row(4, "turn/end")},
			[]int{4}, []int{2, 3, 5, 6}},
		{"a packed row", []string{row(0, "turn/start"), `{"type":"text-chunks","seq0":1,"time0":2001,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}}`, row(4, "session/note"), row(5, "turn/end")},
			[]int{3}, []int{2, 4, 5}},
		{"two in a row, then an unnumbered one", []string{row(0, "turn/start"), `{"seq":1}`, `{"seq":2}`, `{"type":"session/note","data":{}}`, row(4, "turn/end")},
			[]int{3, 4}, []int{2, 5, 6}},
		// A row the source numbers again is refused, past a skip too.
		{"a seq taken again", []string{row(0, "turn/start"), `{"seq":1}`, row(0, "session/note"), row(2, "session/note"), row(3, "turn/end")},
			[]int{3, 4}, []int{2, 5, 6}},
		// A gap with no bad row before it: the row after it is refused,
		// once.
		{"a gap", []string{row(0, "turn/start"), row(1, "session/note"), row(3, "session/note"), row(4, "turn/end")},
			[]int{4}, []int{2, 3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(head + "\n" + strings.Join(tc.rows, "\n") + "\n")
			s, err := importer.Parse(t.Context(), dsh.New(), bytes.NewReader(in), "s.jsonl", importer.Config{SkipBad: true})
			require.NoError(t, err)
			var skipped []int
			for _, re := range s.Skipped {
				skipped = append(skipped, re.Line)
			}
			require.Equal(t, tc.skipped, skipped)
			// A row is in the session as its event's source line, or as the
			// data of the event that keeps it (dsh's own types).
			rows := strings.Split(string(in), "\n")
			has := func(line int) bool {
				for _, e := range s.Events {
					var d struct {
						Source struct{ Line int } `json:"source"`
					}
					if json.Unmarshal(e.Data, &d) == nil && d.Source.Line == line || string(e.Data) == rows[line-1] {
						return true
					}
				}
				return false
			}
			for _, l := range tc.kept {
				require.True(t, has(l), "line %d's row is in the session", l)
			}
			for _, l := range tc.skipped {
				require.False(t, has(l), "line %d's row is not", l)
			}
			def, err := importer.Parse(t.Context(), dsh.New(), bytes.NewReader(in), "s.jsonl", importer.Config{})
			require.NoError(t, err)
			require.NotNil(t, def.Partial, "without SkipBad the import stops at the first bad row")
			require.Equal(t, tc.skipped[0], def.Partial.Line)
			importertest.CheckBadRecords(t, dsh.New(), in, def, dsh.NewBlankAsSkipped())
		})
	}
}
