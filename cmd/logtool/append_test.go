package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
)

const (
	goodLine0 = `{"type":"user/message","time":1,"data":{"text":"a"}}` + "\n"
	goodLine1 = `{"type":"assistant/message","time":2,"data":{"text":"b"}}` + "\n"
)

// TestAppendStopsAtBadLine: on a conflict or a malformed line append
// flushes what came before, prints the ack and an error object, writes
// nothing of that line (nor after it) and exits 1.
func TestAppendStopsAtBadLine(t *testing.T) {
	tests := []struct {
		name string
		bad  string
		kind string
		msg  string // part of the message
	}{
		{"seq ahead", `{"type":"x","seq":5}`, "conflict", "seq 5 is not the next seq 2"},
		{"seq behind", `{"type":"x","seq":1}`, "conflict", "seq 1 is not the next seq 2"},
		{"not json", `{"type":`, "invalid", "not valid JSON"},
		{"not json at all", `hello`, "invalid", "not a JSON object"},
		{"not an object", `["type"]`, "invalid", "not a JSON object"},
		{"unknown key", `{"type":"x","kind":"y"}`, "invalid", `unknown key "kind"`},
		{"repeated key", `{"type":"x","type":"y"}`, "invalid", `key "type" repeated`},
		{"missing type", `{"time":3}`, "invalid", `"type" is missing`},
		{"type not a string", `{"type":7}`, "invalid", `"type" is not a string`},
		{"bad type", `{"type":"has space"}`, "invalid", "type"},
		{"negative time", `{"type":"x","time":-1}`, "invalid", `"time" is -1`},
		{"fractional time", `{"type":"x","time":1.5}`, "invalid", `"time" is 1.5`},
		{"exponent time", `{"type":"x","time":1e3}`, "invalid", `"time" is 1e3`},
		{"negative seq", `{"type":"x","seq":-2}`, "invalid", `"seq" is -2`},
		{"two objects", `{"type":"x"} {"type":"y"}`, "invalid", "more after the object"},
		{"bad data", `{"type":"x","data":{"a":}}`, "invalid", "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			id, _ := newSession(t, dir)
			input := goodLine0 + goodLine1 + tt.bad + "\n" + `{"type":"after"}` + "\n"
			res := logtool(t, input, "--dir", dir, "append", id)
			require.Equal(t, 1, res.code, res.stderr)

			lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
			require.Len(t, lines, 2, res.stdout)
			require.Equal(t, `{"acked":1}`, lines[0])
			var got struct {
				Error struct {
					Kind    string `json:"kind"`
					Line    int    `json:"line"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[1]), &got))
			require.Equal(t, tt.kind, got.Error.Kind)
			require.Equal(t, 3, got.Error.Line)
			require.Contains(t, got.Error.Message, tt.msg)
			require.True(t, strings.HasPrefix(res.stderr, "logtool: line 3: "+tt.kind), res.stderr)

			res = logtool(t, "", "--dir", dir, "cat", "--json", id)
			require.Equal(t, 0, res.code, res.stderr)
			require.Equal(t, 2, strings.Count(res.stdout, "\n"), "nothing of the bad line or after it: %s", res.stdout)
		})
	}
}

func TestAppendBadFirstLineAcksTheLog(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	res := logtool(t, "nonsense\n", "--dir", dir, "append", id)
	require.Equal(t, 1, res.code)
	require.Equal(t, `{"acked":-1}`+"\n"+`{"error":{"kind":"invalid","line":1,"message":"not a JSON object"}}`+"\n", res.stdout)
}

func TestAppendFlushEvery(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		input string
		acks  string
	}{
		{"end of input only", nil, strings.Repeat(goodLine0, 5), "4"},
		{"every 2", []string{"--flush-every", "2"}, strings.Repeat(goodLine0, 5), "1 3 4"},
		{"every 1", []string{"--flush-every", "1"}, strings.Repeat(goodLine0, 3), "0 1 2"},
		{"every 5, 5 lines", []string{"--flush-every", "5"}, strings.Repeat(goodLine0, 5), "4"},
		{"blank lines skipped", []string{"--flush-every", "2"}, goodLine0 + "\n  \n" + goodLine0, "1"},
		{"last line without newline", nil, goodLine0 + strings.TrimSuffix(goodLine1, "\n"), "0 1"}, // a partial line may wait for input: ack first
		{"crlf", nil, strings.ReplaceAll(goodLine0+goodLine1, "\n", "\r\n"), "1"},
		{"empty input", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			id, _ := newSession(t, dir)
			res := logtool(t, tt.input, append([]string{"--dir", dir, "append", id}, tt.args...)...)
			require.Equal(t, 0, res.code, res.stderr)
			var acks []string
			for _, m := range jsonLines(t, res.stdout) {
				acks = append(acks, strings.TrimSuffix(strings.TrimPrefix(mustJSON(t, m), `{"acked":`), "}"))
			}
			require.Equal(t, tt.acks, strings.Join(acks, " "))
		})
	}
	require.Equal(t, 2, logtool(t, "", "--dir", t.TempDir(), "append", "--flush-every", "-1", "01JDX3N0Q3Z8Y6W2D1V5K7M9PA").code)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestAppendAcksWithoutWaiting feeds append through a pipe, one line at a
// time: each ack must arrive while stdin is still open.
func TestAppendAcksWithoutWaiting(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		code := run(t.Context(), []string{"--dir", dir, "append", id}, inR, outW, &errOut, func(string) string { return "" })
		outW.Close()
		done <- code
	}()
	acks := bufio.NewReader(outR)
	for i := range 3 {
		_, err := io.WriteString(inW, goodLine0)
		require.NoError(t, err)
		ack, err := acks.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, `{"acked":`+string(rune('0'+i))+"}\n", ack)
	}
	require.NoError(t, inW.Close())
	_, err := acks.ReadString('\n')
	require.ErrorIs(t, err, io.EOF, "nothing new to ack at the end")
	require.Equal(t, 0, <-done)
}

func TestAppendTimeDefaultsToNow(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	before := time.Now().UnixMilli()
	require.Equal(t, 0, logtool(t, `{"type":"x"}`+"\n"+`{"type":"y","time":0}`+"\n", "--dir", dir, "append", id).code)
	after := time.Now().UnixMilli()
	lines := jsonLines(t, logtool(t, "", "--dir", dir, "cat", "--json", id).stdout)
	require.Len(t, lines, 2)
	require.InDelta(t, (before+after)/2, lines[0]["time"], float64(after-before)/2+1)
	require.EqualValues(t, 0, lines[1]["time"], "0 is a valid time")
}

func TestAppendLocked(t *testing.T) {
	dir := t.TempDir()
	id, _ := newSession(t, dir)
	h, err := handle.NewFileStore(afero.NewOsFs(), dir).Open(context.Background(), id, handle.ReadWrite)
	require.NoError(t, err)
	defer h.Close()

	res := logtool(t, goodLine0, "--dir", dir, "append", id)
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "locked")
	require.Empty(t, res.stdout)
}

func TestAppendRefusesFreelyNamedFile(t *testing.T) {
	dir := t.TempDir()
	_, path := newSession(t, dir)
	free := filepath.Join(dir, "export.jsonl")
	require.NoError(t, copyFile(path, free))
	res := logtool(t, goodLine0, "append", free)
	require.Equal(t, 2, res.code)
	require.Contains(t, res.stderr, "<ID>.jsonl")
}

func TestAppendToForkContinuesAfterForkPoint(t *testing.T) {
	dir := t.TempDir()
	parent, _ := newSession(t, dir)
	require.Equal(t, 0, logtool(t, goodLine0+goodLine0+goodLine0, "--dir", dir, "append", parent).code)
	fork, _ := newSession(t, dir, "--parent", parent, "--at", "1", "--mode", "fork")

	res := logtool(t, `{"type":"x","time":9,"seq":2}`+"\n", "--dir", dir, "append", fork)
	require.Equal(t, 0, res.code, res.stderr)
	require.Equal(t, `{"acked":2}`+"\n", res.stdout)
}
