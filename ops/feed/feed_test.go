package feed_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/ops/feed"
)

const (
	goodLine0 = `{"type":"user/message","time":1,"data":{"text":"a"}}` + "\n"
	goodLine1 = `{"type":"assistant/message","time":2,"data":{"text":"b"}}` + "\n"
)

// writer returns a write handle on a new session of a store in memory,
// and the store.
func writer(t *testing.T) (handle.Handle, handle.Store) {
	t.Helper()
	st := file.New(afero.NewMemMapFs(), "/s")
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h, st
}

// logOf returns the canonical lines of session id as a new reader finds
// them: what is durable.
func logOf(t *testing.T, st handle.Store, id string) []string {
	t.Helper()
	r, err := st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	var out []string
	for e, err := range r.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		out = append(out, string(eventlog.Canon(e)))
	}
	return out
}

func outLines(out string) []string {
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// A conflict or a malformed line flushes what came before, acks it,
// writes the error line and nothing of that line or after it, and Run
// returns the *LineError.
func TestRunStopsAtBadLine(t *testing.T) {
	tests := []struct {
		name string
		bad  string
		kind string
		msg  string // part of the message
	}{
		{"seq ahead", `{"type":"x","seq":5}`, feed.KindConflict, "seq 5 is not the next seq 2"},
		{"seq behind", `{"type":"x","seq":1}`, feed.KindConflict, "seq 1 is not the next seq 2"},
		{"not json", `{"type":`, feed.KindInvalid, "not valid JSON"},
		{"not json at all", `hello`, feed.KindInvalid, "not a JSON object"},
		{"not an object", `["type"]`, feed.KindInvalid, "not a JSON object"},
		{"unknown key", `{"type":"x","kind":"y"}`, feed.KindInvalid, `unknown key "kind"`},
		{"repeated key", `{"type":"x","type":"y"}`, feed.KindInvalid, `key "type" repeated`},
		{"missing type", `{"time":3}`, feed.KindInvalid, `"type" is missing`},
		{"type not a string", `{"type":7}`, feed.KindInvalid, `"type" is not a string`},
		{"bad type", `{"type":"has space"}`, feed.KindInvalid, "type"},
		{"negative time", `{"type":"x","time":-1}`, feed.KindInvalid, `"time" is -1`},
		{"fractional time", `{"type":"x","time":1.5}`, feed.KindInvalid, `"time" is 1.5`},
		{"exponent time", `{"type":"x","time":1e3}`, feed.KindInvalid, `"time" is 1e3`},
		{"negative seq", `{"type":"x","seq":-2}`, feed.KindInvalid, `"seq" is -2`},
		{"two objects", `{"type":"x"} {"type":"y"}`, feed.KindInvalid, "more after the object"},
		{"bad data", `{"type":"x","data":{"a":}}`, feed.KindInvalid, "data"},
		{"refused by the log", `{"type":"checkpoint","data":{}}`, feed.KindInvalid, "checkpoint"},
		{"too long", `{"type":"x","data":"` + strings.Repeat("a", feed.MaxLine) + `"}`, feed.KindInvalid, "line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := writer(t)
			var out strings.Builder
			err := feed.Run(t.Context(), h, strings.NewReader(goodLine0+goodLine1+tt.bad+"\n"+`{"type":"after"}`+"\n"), &out)
			var le *feed.LineError
			require.ErrorAs(t, err, &le)
			require.Equal(t, feed.LineError{Kind: tt.kind, Line: 3, Message: le.Message}, *le)
			require.Contains(t, le.Message, tt.msg)
			lines := outLines(out.String())
			// Acks of seq 1 (one more, just before the error line, when the
			// bad line was not buffered and so was read after a flush),
			// then the error line.
			require.Contains(t, []int{2, 3}, len(lines), out.String())
			for _, l := range lines[:len(lines)-1] {
				require.Equal(t, `{"acked":1}`, l)
			}
			var got feed.ErrorLine
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got))
			require.Equal(t, le, got.Error)
			require.Len(t, logOf(t, st, h.ID()), 2, "nothing of the bad line or after it")
		})
	}
}

// A bad first line acks the log as it is (-1: empty).
func TestRunBadFirstLineAcksTheLog(t *testing.T) {
	h, _ := writer(t)
	var out strings.Builder
	err := feed.Run(t.Context(), h, strings.NewReader("nonsense\n"), &out)
	require.ErrorAs(t, err, new(*feed.LineError))
	require.Equal(t, `{"acked":-1}`+"\n"+`{"error":{"kind":"invalid","line":1,"message":"not a JSON object"}}`+"\n", out.String())
}

// Run flushes every N events, when the input holds no further complete
// line, and at its end; each flush is acked with the last durable seq.
func TestRunFlushes(t *testing.T) {
	tests := []struct {
		name  string
		every int
		input string
		acks  string
	}{
		{"end of input only", 0, strings.Repeat(goodLine0, 5), "4"},
		{"every 2", 2, strings.Repeat(goodLine0, 5), "1 3 4"},
		{"every 1", 1, strings.Repeat(goodLine0, 3), "0 1 2"},
		{"every 5, 5 lines", 5, strings.Repeat(goodLine0, 5), "4"},
		{"blank lines skipped", 2, goodLine0 + "\n  \n" + goodLine0, "1"},
		{"last line without newline", 0, goodLine0 + strings.TrimSuffix(goodLine1, "\n"), "0 1"}, // a partial line may wait for input: ack first
		{"crlf", 0, strings.ReplaceAll(goodLine0+goodLine1, "\n", "\r\n"), "1"},
		{"empty input", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := writer(t)
			var out strings.Builder
			require.NoError(t, feed.Run(t.Context(), h, strings.NewReader(tt.input), &out, feed.FlushEvery(tt.every)))
			var acks []string
			for _, l := range outLines(out.String()) {
				if l == "" {
					continue
				}
				var a feed.Ack
				require.NoError(t, json.Unmarshal([]byte(l), &a))
				acks = append(acks, fmt.Sprint(a.Acked))
			}
			require.Equal(t, tt.acks, strings.Join(acks, " "))
		})
	}
	h, _ := writer(t)
	require.ErrorContains(t, feed.Run(t.Context(), h, strings.NewReader(goodLine0), io.Discard, feed.FlushEvery(-1)), "want n >= 0")
}

// Fed through a pipe one line at a time, each ack arrives while the input
// is still open: no ack waits for more input.
func TestRunAcksWithoutWaiting(t *testing.T) {
	h, _ := writer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- feed.Run(t.Context(), h, inR, outW)
		outW.Close()
	}()
	acks := bufio.NewReader(outR)
	for i := range 3 {
		_, err := io.WriteString(inW, goodLine0)
		require.NoError(t, err)
		ack, err := acks.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`{"acked":%d}`+"\n", i), ack)
	}
	require.NoError(t, inW.Close())
	_, err := acks.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "nothing new to ack at the end")
	require.NoError(t, <-done)
}

// Ended by ctx while a read of the input blocks, Run flushes what it
// appended, acks it and returns ctx's error.
func TestRunInterrupted(t *testing.T) {
	h, st := writer(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- feed.Run(ctx, h, inR, outW, feed.FlushEvery(100))
		outW.Close()
	}()
	acks := bufio.NewReader(outR)
	_, err := io.WriteString(inW, goodLine0+goodLine1)
	require.NoError(t, err)
	ack, err := acks.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, `{"acked":1}`+"\n", ack, "acked before the read that blocks")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	_, err = acks.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "nothing was pending")
	require.Len(t, logOf(t, st, h.ID()), 2)
}

// A missing time is the clock's; 0 is a time; a seq asks for that seq.
func TestRunTimeAndSeq(t *testing.T) {
	h, st := writer(t)
	now := time.UnixMilli(1764450000123)
	require.NoError(t, feed.Run(t.Context(), h, strings.NewReader(`{"type":"x"}`+"\n"+`{"type":"y","time":0,"seq":1}`+"\n"), io.Discard,
		feed.WithClock(func() time.Time { return now })))
	require.Equal(t, []string{`{"seq":0,"type":"x","time":1764450000123,"data":null}`, `{"seq":1,"type":"y","time":0,"data":null}`}, logOf(t, st, h.ID()))
}

// A failed flush is Run's error, as it is: nothing is acked after it.
func TestRunFlushFails(t *testing.T) {
	h, _ := writer(t)
	require.NoError(t, h.Close())
	var out strings.Builder
	err := feed.Run(t.Context(), h, strings.NewReader(goodLine0), &out)
	require.ErrorIs(t, err, handle.ErrClosed)
	require.Empty(t, out.String())
}

// ParseLine decodes what the protocol allows and refuses the rest; the
// table of refusals is TestRunStopsAtBadLine's.
func TestParseLine(t *testing.T) {
	now := time.UnixMilli(42)
	e, seq, err := feed.ParseLine([]byte(`{"data":{"b":[1,2]},"seq":7,"time":5,"type":"tool/call"}`), now)
	require.NoError(t, err)
	require.Equal(t, int64(7), seq)
	require.Equal(t, eventlog.Event{Type: "tool/call", Time: 5, Data: json.RawMessage(`{"b":[1,2]}`)}, e)
	e, seq, err = feed.ParseLine([]byte(`{"type":"x","data":null}`), now)
	require.NoError(t, err)
	require.Equal(t, int64(-1), seq)
	require.Equal(t, eventlog.Event{Type: "x", Time: 42}, e, "null data is none; time is now")
	_, _, err = feed.ParseLine([]byte(`{"type":"x","seq":99999999999999999999}`), now)
	require.ErrorContains(t, err, `"seq" is`)
	require.False(t, errors.Is(err, io.EOF))
}

// FuzzParseLine: no input panics; an accepted line is a valid event, and
// the line written back from it (canonically) parses to the same event
// and seq.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{goodLine0, goodLine1, `{"type":"x","seq":3}`, `{"type":"x","data":null}`, `{"type":"x","time":0}`,
		`{"type":"x","type":"y"}`, `{"type":"x"} {}`, `{"type":"x","data":{"a":}}`, `[`, `{"type":"x","time":1e3}`, `{"type":"checkpoint","data":{}}`} {
		f.Add([]byte(s))
	}
	now := time.UnixMilli(7)
	f.Fuzz(func(t *testing.T, line []byte) {
		e, seq, err := feed.ParseLine(line, now)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		require.NoError(t, e.Validate())
		require.GreaterOrEqual(t, seq, int64(-1))
		m := map[string]any{"type": e.Type, "time": e.Time}
		if e.Data != nil {
			m["data"] = json.RawMessage(e.Data)
		}
		if seq >= 0 {
			m["seq"] = seq
		}
		again, err := json.Marshal(m)
		require.NoError(t, err)
		e2, seq2, err := feed.ParseLine(again, now)
		require.NoError(t, err, "%s", again)
		require.Equal(t, seq, seq2)
		require.Equal(t, string(eventlog.Canon(e)), string(eventlog.Canon(e2)))
	})
}
