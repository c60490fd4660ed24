package dsh_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/importer/dsh"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
	"github.com/sessionlog/sessionlog/internal/testkit/tracestest"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// traces returns the real dsh sessions under the traces folder beside the
// repository; the test skips when they are absent (fails under
// SESSIONLOG_TRACES=require, as in CI).
func traces(t *testing.T) []string {
	t.Helper()
	return tracestest.Glob(t, filepath.Join("dsh-deepseek-harness", "*", "session.jsonl"))
}

// source is what a test reads from a dsh file by itself, to check the
// converter against.
type source struct {
	events  int64          // events the rows stand for (a packed row: its deltas)
	lastSeq int64          // the last seq the source names, -1 when it names none
	types   map[string]int // events by type (packed deltas as assistant/chunk)
	plain   map[int]row    // unpacked rows by their event's position
}

type row struct {
	Type string          `json:"type"`
	Seq  *int64          `json:"seq"`
	Time *int64          `json:"time"`
	Data json.RawMessage `json:"data"`
	Seq0 *int64          `json:"seq0"`
}

func readSource(t *testing.T, path string) source {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	src := source{lastSeq: -1, types: map[string]int{}, plain: map[int]row{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	require.True(t, sc.Scan(), "a header")
	for sc.Scan() {
		var r row
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Seq0 != nil {
			var d struct{ Texts, Args []string }
			require.NoError(t, json.Unmarshal(r.Data, &d))
			n := int64(len(d.Texts) + len(d.Args))
			src.types["assistant/chunk"] += int(n)
			src.events += n
			src.lastSeq = *r.Seq0 + n - 1
			continue
		}
		src.plain[int(src.events)] = r
		src.types[r.Type]++
		src.events++
		if r.Seq != nil {
			src.lastSeq = *r.Seq
		}
	}
	require.NoError(t, sc.Err())
	return src
}

// TestRealSessions converts each real dsh session faithfully (types and
// data as they are), writes it to a temp store, reads it back, and
// replays it into the built-in projections.
func TestRealLogs(t *testing.T) {
	for _, path := range traces(t) {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			src := readSource(t, path)
			s, err := dsh.ParseLogFile(path)
			require.NoError(t, err)

			// Every event of the source, no more, seqs contiguous.
			require.Equal(t, src.events, int64(len(s.Events)))
			if src.lastSeq >= 0 {
				require.Equal(t, src.lastSeq, s.Events[len(s.Events)-1].Seq, "the source's own seqs are kept")
			}
			for i, e := range s.Events {
				require.Equal(t, int64(i), e.Seq)
				if r, ok := src.plain[i]; ok {
					require.Equal(t, r.Type, e.Type, "seq %d", i)
					require.JSONEq(t, string(r.Data), string(e.Data), "seq %d: data kept as it is", i)
					if r.Time != nil {
						require.Equal(t, *r.Time, e.Time, "seq %d", i)
					}
				} else {
					require.Equal(t, "assistant/chunk", e.Type, "seq %d: a packed delta", i)
				}
			}
			require.Equal(t, s.Report.PackedRows > 0, src.types["assistant/chunk"] > countPlain(src, "assistant/chunk"))

			// Through the library's write path and back.
			dir := t.TempDir()
			fileb, err := store(t.Context(), dir, s)
			require.NoError(t, err)
			st := file.New(afero.NewOsFs(), dir)
			check := st.CheckPath(t.Context(), fileb, nil)
			require.NoError(t, check.Err)
			require.Nil(t, check.Torn)
			require.Equal(t, src.events, check.Events)
			h, err := st.Open(t.Context(), s.ID, handle.ReadOnly)
			require.NoError(t, err)
			defer h.Close()
			require.Equal(t, "dsh", h.Header().Labels["source"])
			i := 0
			for e, err := range h.Read(t.Context(), 0, handle.End) {
				require.NoError(t, err)
				require.Equal(t, string(eventlog.Canon(s.Events[i])), string(eventlog.Canon(e)))
				i++
			}
			require.Equal(t, len(s.Events), i)

			agent, transcript := projection.NewAgent(), projection.NewTranscript()
			res, err := replay.Replay(t.Context(), h, []projection.Projection{agent, transcript})
			require.NoError(t, err)
			require.Equal(t, src.events-1, res.Seq)

			// The lifecycle types take effect whatever their data.
			as := agent.State()
			require.Equal(t, src.types["turn/start"], as.Turns)
			require.Equal(t, src.types["step/start"], as.Steps)
			require.False(t, as.TurnOpen)
			require.False(t, as.StepOpen)
			require.NotNil(t, as.LastStop)

			// dsh's shapes are not docs/format.md §8's: each such event is reported
			// as degraded with its seq, none is silently taken or dropped.
			ts := transcript.State()
			degraded := byType(ts.Degraded)
			for _, typ := range []string{"user/message", "assistant/message", "tool/call"} {
				require.Equal(t, src.types[typ], degraded[typ], "transcript: every %s degraded", typ)
			}
			require.Equal(t, src.types["tool/call"], byType(as.Degraded)["tool/call"], "agent: every tool/call degraded")
			require.Empty(t, ts.Messages, "no message of dsh's shape is mistaken for one of ours")
			for _, d := range append(as.Degraded, ts.Degraded...) {
				require.True(t, d.Seq >= 0 && d.Seq < src.events)
				require.Equal(t, s.Events[d.Seq].Type, d.Type)
				require.NotEmpty(t, d.Reason)
			}
			t.Logf("%s: %d events (%d rows, %d packed); degraded: agent %s; transcript %s; dropped row keys %v",
				name, len(s.Events), s.Report.Rows, s.Report.PackedRows, summary(as.Degraded), summary(ts.Degraded), s.Report.DroppedKeys)
		})
	}
}

// TestRealSessionsVocabulary converts the real sessions with their data
// rewritten into docs/format.md §8's shapes: the transcript then rebuilds the real
// conversation, tool results beside their calls.
func TestRealLogsVocabulary(t *testing.T) {
	for _, path := range traces(t) {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			src := readSource(t, path)
			s, err := dsh.ParseLogFile(path, dsh.Vocabulary())
			require.NoError(t, err)
			require.Equal(t, src.events, int64(len(s.Events)))
			require.Positive(t, s.Report.Reshaped)

			dir := t.TempDir()
			_, err = store(t.Context(), dir, s)
			require.NoError(t, err)
			h, err := file.New(afero.NewOsFs(), dir).Open(t.Context(), s.ID, handle.ReadOnly)
			require.NoError(t, err)
			defer h.Close()
			agent, transcript := projection.NewAgent(), projection.NewTranscript()
			_, err = replay.Replay(t.Context(), h, []projection.Projection{agent, transcript})
			require.NoError(t, err)

			roles := map[string]int{}
			ts := transcript.State()
			for _, m := range ts.Messages {
				roles[m.Role]++
				if m.Role == projection.RoleTool {
					require.NotEmpty(t, m.Name, "seq %d: a result beside its call", m.Seq)
				}
			}
			require.GreaterOrEqual(t, roles[projection.RoleUser], 1)
			require.GreaterOrEqual(t, roles[projection.RoleAssistant], 1)
			require.Equal(t, src.types["tool/result"], roles[projection.RoleTool], "one tool message per result")
			require.Empty(t, ts.Degraded)
			as := agent.State()
			require.Empty(t, as.PendingCalls, "every call has its result")
			require.Empty(t, as.Degraded)
			require.NotNil(t, as.LastStop)
			require.Equal(t, "completed", as.LastStop.Kind)
			t.Logf("%s: %d messages %v", name, len(ts.Messages), roles)
		})
	}
}

func TestParseLog(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":0,"id":"x","createdAt":1000,"cwd":"/w"}`,
		`{"type":"turn/start","data":{"turn":1}}`,
		`{"type":"user/message","seq":1,"time":2000,"data":{"content":[{"type":"text","text":"a<b"}]},"surfaceOp":"append"}`,
		`{"type":"text-chunks","seq0":2,"time0":3000,"data":{"turn":1,"step":1,"index":0,"dt":[5,0],"texts":["x","y","z"]}}`,
		`{"type":"tool-call-chunks","seq0":5,"time0":4000,"data":{"turn":1,"step":1,"index":1,"dt":[7],"id":"c1","name":"sh","args":["{","}"]}}`,
		`{"type":"step/end"}`,
		``,
	}, "\n")
	s, err := dsh.ParseLog(strings.NewReader(in))
	require.NoError(t, err)
	var got []string
	for _, e := range s.Events {
		got = append(got, string(eventlog.Canon(e)))
	}
	require.Equal(t, []string{
		`{"seq":0,"type":"turn/start","time":1001,"data":{"turn":1}}`,
		`{"seq":1,"type":"user/message","time":2000,"data":{"content":[{"type":"text","text":"a<b"}]}}`,
		`{"seq":2,"type":"assistant/chunk","time":3000,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}}`,
		`{"seq":3,"type":"assistant/chunk","time":3005,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"y"}}}`,
		`{"seq":4,"type":"assistant/chunk","time":3005,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"z"}}}`,
		`{"seq":5,"type":"assistant/chunk","time":4000,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c1","name":"sh","argumentsDelta":"{"}}}`,
		`{"seq":6,"type":"assistant/chunk","time":4007,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"c1","name":"sh","argumentsDelta":"}"}}}`,
		`{"seq":7,"type":"step/end","time":4008,"data":null}`,
	}, got)
	require.Equal(t, dsh.Report{Rows: 5, PackedRows: 2, SeqsAssigned: 2, TimesAssigned: 2, DroppedKeys: map[string]int{"surfaceOp": 1}}, s.Report)
	require.Equal(t, map[string]string{"source": "dsh", "dsh.id": "x", "dsh.version": "0", "dsh.cwd": "/w"}, s.Labels)
	require.True(t, eventlog.ValidID(s.ID))
	again, err := dsh.ParseLog(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, s.ID, again.ID, "the same header gives the same ID")

	v, err := dsh.ParseLog(strings.NewReader(in), dsh.Vocabulary())
	require.NoError(t, err)
	require.Equal(t, `{"text":"a<b"}`, string(v.Events[1].Data))
	require.Equal(t, `{"text":"y"}`, string(v.Events[3].Data))
	require.Equal(t, 4, v.Report.Reshaped, "the message and the three text deltas")
}

func TestVocabularyShapes(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":0,"id":"x","createdAt":1}`,
		`{"type":"assistant/message","data":{"message":{"content":[{"type":"reasoning","text":"hm"},{"type":"text","text":"Hi"},{"type":"tool-call","id":"c1"}]}}}`,
		`{"type":"tool/call","data":{"callId":"c1","name":"sh","arguments":"{\"cmd\":\"ls\"}"}}`,
		`{"type":"tool/result","data":{"message":{"source":{"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"denied"}],"isError":true}]},"error":{"code":"E"}}}`,
		`{"type":"tool/result","data":{"message":{"source":{"callId":"c2"},"content":[]},"error":{"code":"E"}}}`,
		`{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}`,
		`{"type":"user/message","data":{"text":"already ours"}}`,
	}, "\n")
	s, err := dsh.ParseLog(strings.NewReader(in), dsh.Vocabulary())
	require.NoError(t, err)
	var got []string
	for _, e := range s.Events {
		got = append(got, string(e.Data))
	}
	require.Equal(t, []string{
		`{"text":"Hi"}`,
		`{"id":"c1","name":"sh","args":{"cmd":"ls"}}`,
		`{"id":"c1","error":"denied"}`,
		`{"id":"c2","error":"{\"code\":\"E\"}"}`,
		`{"kind":"completed"}`,
		`{"text":"already ours"}`,
	}, got)
	require.Equal(t, 5, s.Report.Reshaped)
}

func TestParseLogErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      ``,
		"no header":  `{"type":"turn/start","seq":0}`,
		"seq gap":    "{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"a\",\"seq\":1}",
		"bad packed": "{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":1,\"data\":{\"dt\":[1,2],\"texts\":[\"a\",\"b\"]}}",
		"unknown pk": "{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"image-chunks\",\"seq0\":0,\"data\":{}}",
		"no type":    "{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"seq\":0}",
		"float seq":  "{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"a\",\"seq\":0.5}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := dsh.ParseLog(strings.NewReader(in))
			require.Error(t, err)
			require.True(t, errors.Is(err, dsh.ErrFormat), "%v", err)
		})
	}
}

func countPlain(src source, typ string) int {
	n := 0
	for _, r := range src.plain {
		if r.Type == typ {
			n++
		}
	}
	return n
}

func byType(ds []projection.Degraded) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.Type]++
	}
	return out
}

// summary shows a degraded list as counts by type and reason.
func summary(ds []projection.Degraded) string {
	counts := map[string]int{}
	for _, d := range ds {
		counts[d.Type+" ("+d.Reason+")"]++
	}
	if len(counts) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// Regression: Parse took rows the log refuses, so Store failed on append:
// a type outside A-Z a-z 0-9 . _ : / - or longer than 128 bytes, one of
// sessionlog's own types (a checkpoint or rollback of dsh's would be taken
// for the library's), data nested too deeply once the vocabulary puts it
// in "args", an event beyond the row limit once reshaped (each invalid
// UTF-8 byte of a text becomes a 3-byte U+FFFD). A line longer than a row
// was an error without ErrFormat or the line. Each is now a format error
// naming its line.
func TestParseRefusesWhatTheLogRefuses(t *testing.T) {
	const hdr = `{"type":"session","version":0,"createdAt":1}` + "\n"
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, c := range []struct {
		name, in, want string
		vocabulary     bool
	}{
		{name: "space", in: hdr + `{"type":"turn start"}`, want: "line 2: eventlog: invalid event: type \"turn start\" has a character"},
		{name: "long", in: hdr + "\n" + `{"type":"` + strings.Repeat("a", 129) + `"}`, want: "line 3: eventlog: invalid event: type must be 1 to 128 characters"},
		{name: "checkpoint", in: hdr + `{"type":"checkpoint","data":{"log":"x"}}`, want: `line 2: type "checkpoint" is sessionlog's own`},
		{name: "rollback", in: hdr + `{"type":"a"}` + "\n" + `{"type":"rollback","data":{"to":0}}`, want: `line 3: type "rollback" is sessionlog's own`},
		{name: "deep args", in: hdr + `{"type":"tool/call","data":{"callId":"c","arguments":"` + deep + `"}}`, vocabulary: true, want: "line 2: seq 0: eventlog: invalid event: data of type \"tool/call\" is not valid JSON: nesting too deep"},
		{
			name: "reshaped too large", vocabulary: true,
			// encoding/json writes U+2028 (3 bytes) as \u2028: twice the
			// bytes. (Bytes that are not UTF-8 are refused before any reshaping.)
			in:   hdr + `{"type":"user/message","data":{"content":[{"type":"text","text":"` + strings.Repeat("\u2028", eventlog.MaxRowSize/6+1) + `"}]}}`,
			want: "line 2: seq 0: eventlog: row too large: the row of a \"user/message\" event would be ",
		},
		{name: "long header", in: `{"type":"session","version":0,"createdAt":1,"x":"` + strings.Repeat("a", eventlog.MaxRowSize) + `"}`, want: "line 1: more than the 16777216 bytes a row may have"},
		{name: "long row", in: hdr + "\n" + `{"type":"a","data":"` + strings.Repeat("a", eventlog.MaxRowSize) + `"}` + "\n", want: "line 3: more than the 16777216 bytes a row may have"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []dsh.LogOption
			if c.vocabulary {
				opts = append(opts, dsh.Vocabulary())
			}
			_, err := dsh.ParseLog(strings.NewReader(c.in), opts...)
			require.ErrorIs(t, err, dsh.ErrFormat)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// The faithful conversion keeps the deep arguments as the string they are.
	s, err := dsh.ParseLog(strings.NewReader(hdr + `{"type":"tool/call","data":{"callId":"c","arguments":"` + deep + `"}}`))
	require.NoError(t, err)
	require.Len(t, s.Events, 1)
}

// Regression: a header value that is not a string, holding invalid UTF-8,
// became a label the session's header cannot hold as it is (JSON turns
// each invalid byte into U+FFFD), so the stored labels differed from
// Session.Labels. Found by FuzzParseLog (testdata/fuzz/FuzzParseLog/3a82466ac217abf9).
func TestHeaderLabelsValidUTF8(t *testing.T) {
	s, err := dsh.ParseLog(strings.NewReader("{\"type\":\"session\",\"version\":0,\"createdAt\":1,\"x\":[\"a\xffb\"],\"y\":\"c\xfed\"}\n"))
	require.NoError(t, err)
	require.Equal(t, "[\"a\uFFFDb\"]", s.Labels["dsh.x"])
	require.Equal(t, "c\uFFFDd", s.Labels["dsh.y"], "a string is decoded as JSON decodes it")
	hdr := importertest.RoundTrip(t, s.Events, handle.WithID(s.ID), handle.WithCreatedAt(s.CreatedAt), handle.WithLabels(s.Labels))
	require.Equal(t, s.Labels, hdr.Labels)
}
