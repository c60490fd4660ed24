package dsh_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/dsh"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// FuzzParse imports arbitrary bytes as a dsh log. The seeds are those of
// FuzzParseLog; testdata/fuzz/FuzzParse holds a few more: rows
// of the real sessions, and what the fuzzer found.
func FuzzParse(f *testing.F) {
	for _, in := range importertest.DshLogs() {
		f.Add(in)
	}
	// Rows the builder drops (invalid UTF-8 in a key no event keeps)
	// after they changed the turn state.
	f.Add([]byte("{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"turn/start\",\"data\":{}}\n" +
		"{\"type\":\"step/start\",\"data\":{}}\n{\"type\":\"step/end\",\"data\":{},\"x\":\"\x87\"}\n" +
		"{\"type\":\"tool/call\",\"data\":{\"callId\":\"c\"},\"x\":\"\x87\"}\n{\"type\":\"a\"}\n"))
	// Numbered rows with bad ones among them, and a blank line: SkipBad
	// numbers the rows after a skipped one on past its gap.
	f.Add([]byte("{\"type\":\"session\",\"version\":0,\"createdAt\":1}\n{\"type\":\"turn/start\",\"seq\":0,\"data\":{}}\n" +
		"{\"seq\":1}\n\n{\"type\":\"a\",\"seq\":2,\"data\":{},\"x\":\"\x87\"}\n{\"type\":\"a\",\"seq\":3}\n{\"type\":\"a\",\"seq\":3}\n" +
		"{\"type\":\"text-chunks\",\"seq0\":4,\"data\":{\"dt\":[1],\"texts\":[\"a\",\"b\"]}}\n{\"type\":\"a\",\"seq\":9}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := dsh.Parse(bytes.NewReader(in), "/snap/session.jsonl")
		if err != nil {
			importertest.CheckError(t, err, in, importer.ErrFormat)
			_, err2 := dsh.Parse(bytes.NewReader(in), "/snap/session.jsonl")
			require.EqualError(t, err2, err.Error(), "deterministic")
			return
		}
		again, err := dsh.Parse(bytes.NewReader(in), "/snap/session.jsonl")
		require.NoError(t, err)
		require.Equal(t, s, again, "deterministic")
		importertest.CheckSession(t, s, dsh.Name)
		require.Empty(t, s.Spawns)
		require.Empty(t, s.Key)

		importertest.CheckLossless(t, dsh.New(), in, s)

		// The mapping: the header as dsh/session, then each event of the
		// vocabulary conversion, in order, with its time: dsh's own types
		// as the row itself (dsh/<type>), the vocabulary's with their data
		// and a "source" (or, for data that can hold none, beside the row
		// as dsh/record); before a rewritten assistant/message its
		// reasoning, after it its usage.
		// Compared with the faithful reading of the bytes the session was
		// made of: the file without a torn last line, or the lines before
		// the bad one.
		made := in[:s.Bytes]
		raw, err := dsh.ParseLog(bytes.NewReader(made))
		require.NoError(t, err, "the importer took what the converter refuses")
		voc, err := dsh.ParseLog(bytes.NewReader(made), dsh.Vocabulary())
		require.NoError(t, err, "the importer took what the converter refuses")
		require.Equal(t, voc.CreatedAt, s.CreatedAt)
		require.Equal(t, voc.Labels["dsh.id"], s.Labels["sourceId"])
		require.Equal(t, "dsh/session", s.Events[0].Type)
		j := 1
		for i, e := range voc.Events {
			rewritten := !bytes.Equal(e.Data, raw.Events[i].Data)
			message := rewritten && e.Type == "assistant/message"
			for message && j < len(s.Events) && s.Events[j].Type == "assistant/reasoning" {
				j++
			}
			require.Less(t, j, len(s.Events), "dsh seq %d has no event", e.Seq)
			got := s.Events[j]
			beside := got.Type == "dsh/record"
			if beside {
				j++
				require.Less(t, j, len(s.Events), "dsh seq %d has no event", e.Seq)
				got = s.Events[j]
				data, err := importer.Marshal(json.RawMessage(e.Data))
				require.NoError(t, err)
				require.Equal(t, string(data), string(got.Data), "dsh seq %d → seq %d: data kept beside the row", e.Seq, j)
			}
			require.Equal(t, e.Time, got.Time, "dsh seq %d → seq %d", e.Seq, j)
			switch {
			case got.Type == importer.Namespace(dsh.Name, e.Type):
				require.False(t, importer.IsVocabulary(e.Type), "dsh seq %d → seq %d: %s", e.Seq, j, got.Type)
			case got.Type == e.Type:
				data, err := importer.Marshal(json.RawMessage(e.Data))
				require.NoError(t, err)
				kept := got.Data
				if !beside && importertest.Fields(got)["source"] != nil {
					kept, err = importer.Without(got.Data, "source")
					require.NoError(t, err)
				}
				require.Equal(t, string(data), string(kept), "dsh seq %d → seq %d: data kept", e.Seq, j)
			default:
				t.Fatalf("dsh seq %d (%s) → seq %d: %s", e.Seq, e.Type, j, got.Type)
			}
			j++
			if message && j < len(s.Events) && s.Events[j].Type == "usage" {
				checkUsage(t, s.Events[j])
				j++
			}
		}
		// Then what closes a turn the log leaves open: synthetic results, a
		// step/end, turn/end interrupted.
		for ; j < len(s.Events); j++ {
			e := s.Events[j]
			d := importertest.Fields(e)
			switch e.Type {
			case "tool/result":
				require.Equal(t, "true", string(d["synthetic"]), "seq %d: a closer", j)
			case "step/end":
			case "turn/end":
				require.Equal(t, `"interrupted"`, string(d["kind"]))
				require.Equal(t, len(s.Events)-1, j, "the turn/end last")
			default:
				t.Fatalf("seq %d (%s): an event the mapping does not explain", j, e.Type)
			}
		}
		checkClosers(t, s.Events)
		importertest.CheckBadRecords(t, dsh.New(), in, s, dsh.NewBlankAsSkipped())
	})
}

// checkClosers checks what closes a log that ends mid-turn: the events
// before the closers (the events at the end without a "source": synthetic
// results, a step/end, a turn/end), replayed as the log's own lifecycle
// events (a turn/end ends its step and forgets its calls), leave a turn
// open exactly when there are closers, and then the closers answer the
// calls left without a result, in call order, end the step when one is
// open, and end the turn, interrupted.
func checkClosers(t *testing.T, es []eventlog.Event) {
	t.Helper()
	k := len(es)
	for k > 0 {
		d := importertest.Fields(es[k-1])
		if _, src := d["source"]; d == nil || src || !slices.Contains([]string{"tool/result", "step/end", "turn/end"}, es[k-1].Type) {
			break
		}
		k--
	}
	var (
		turn, step bool
		calls      []string
	)
	for _, e := range es[:k] {
		switch e.Type {
		case "turn/start":
			turn = true
		case "turn/end":
			turn, step, calls = false, false, nil
		case "step/start":
			step = true
		case "step/end":
			step = false
		case "tool/call", "tool/result":
			var d struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(e.Data, &d) != nil || d.ID == "" {
				continue
			}
			calls = slices.DeleteFunc(calls, func(id string) bool { return id == d.ID })
			if e.Type == "tool/call" {
				calls = append(calls, d.ID)
			}
		}
	}
	var want, got []string
	if turn {
		for _, id := range calls {
			r, err := importer.Marshal(importer.Obj{"id", id, "error", importer.MsgNoResult, "synthetic", true})
			require.NoError(t, err)
			want = append(want, "tool/result "+string(r))
		}
		if step {
			want = append(want, "step/end {}")
		}
		want = append(want, `turn/end {"kind":"interrupted","reason":"`+importer.ReasonTraceEnds+`"}`)
	}
	for _, e := range es[k:] {
		got = append(got, e.Type+" "+string(e.Data))
	}
	require.Equal(t, want, got, "the closers of what the events before them leave open")
}

// checkUsage checks an added usage: no count negative (a wrapped sum would
// be), inputTokens counting the cached tokens too.
func checkUsage(t *testing.T, e eventlog.Event) {
	t.Helper()
	var u struct {
		InputTokens, OutputTokens *int64
		CachedTokens              int64
	}
	require.NoError(t, json.Unmarshal(e.Data, &u), "%s", e.Data)
	require.NotNil(t, u.InputTokens, "%s", e.Data)
	require.NotNil(t, u.OutputTokens, "%s", e.Data)
	in, out, cached := *u.InputTokens, *u.OutputTokens, u.CachedTokens
	require.True(t, in >= 0 && out >= 0 && cached >= 0, "token counts %d %d %d", in, out, cached)
	require.GreaterOrEqual(t, in, cached, "inputTokens counts cachedTokens")
}
