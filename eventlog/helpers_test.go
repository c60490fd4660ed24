package eventlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

const (
	testID     = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	testParent = "01JDX2ZJ6M4B2T8V0C3N5Q7R9S"
	testTime   = 1764450000000
)

// hdrLine is a minimal valid header row with its newline.
const hdrLine = `{"format":"sessionlog","version":1,"id":"` + testID + `","createdAt":1764450000000}` + "\n"

// ev builds an event; data "" means nil (absent).
func ev(seq int64, typ string, time int64, data string) eventlog.Event {
	e := eventlog.Event{Seq: seq, Type: typ, Time: time}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

// row is canon(e) plus '\n': the unpacked row a writer stores.
func row(seq int64, typ string, time int64, data string) string {
	return string(eventlog.AppendCanon(nil, ev(seq, typ, time, data))) + "\n"
}

// rows returns n plain rows with seqs first..first+n-1.
func rows(first int64, n int) string {
	var b strings.Builder
	for k := range int64(n) {
		b.WriteString(row(first+k, "user/message", testTime+first+k, `{"text":"m`+strconv.FormatInt(first+k, 10)+`"}`))
	}
	return b.String()
}

// rowsEvents returns the events of rows(first, n).
func rowsEvents(first int64, n int) []eventlog.Event {
	var evs []eventlog.Event
	for k := range int64(n) {
		evs = append(evs, ev(first+k, "user/message", testTime+first+k, `{"text":"m`+strconv.FormatInt(first+k, 10)+`"}`))
	}
	return evs
}

func forkHeader(t testing.TB, mode string, seq int64) string {
	t.Helper()
	h := logfile.NewHeader(testID, testTime)
	h.Parent = &eventlog.Parent{ID: testParent, Seq: seq, Mode: mode}
	b, err := eventlog.EncodeHeader(h)
	require.NoError(t, err)
	return string(b) + "\n"
}

// result is everything a read ends with.
type result struct {
	events []eventlog.Event
	err    error
	torn   *eventlog.TornTail
	end    int64
	next   int64
}

func readAll(t testing.TB, src io.Reader, opts ...eventlog.ReaderOption) result {
	t.Helper()
	r := eventlog.NewReader(src, opts...)
	var res result
	for r.Next() {
		res.events = append(res.events, r.Event())
	}
	res.err, res.torn, res.end, res.next = r.Err(), r.Torn(), r.End(), r.NextSeq()
	// Once ended, a Reader stays ended.
	require.False(t, r.Next(), "Next after the end")
	require.Equal(t, res.err, r.Err())
	return res
}

func readBytes(t testing.TB, data string, opts ...eventlog.ReaderOption) result {
	t.Helper()
	return readAll(t, strings.NewReader(data), opts...)
}

// requireClean asserts a clean end after the given events.
func requireClean(t testing.TB, res result, size int, want []eventlog.Event) {
	t.Helper()
	require.NoError(t, res.err)
	require.Nil(t, res.torn)
	requireEvents(t, want, res.events)
	require.Equal(t, int64(size), res.end)
}

// requireEvents asserts got holds exactly the events want (nil and empty
// are the same).
func requireEvents(t testing.TB, want, got []eventlog.Event) {
	t.Helper()
	if len(want) == 0 {
		require.Empty(t, got)
		return
	}
	require.Equal(t, want, got)
}

// requireCorrupt asserts the read ended in a *CorruptError with the given
// offset, seq and reason substring, and returns it.
func requireCorrupt(t testing.TB, err error, offset, seq int64, reason string) *eventlog.CorruptError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, eventlog.ErrCorrupt)
	require.NotErrorIs(t, err, eventlog.ErrVersion)
	var ce *eventlog.CorruptError
	require.True(t, errors.As(err, &ce), "error %T %v is not a *CorruptError", err, err)
	require.Equal(t, offset, ce.Offset, "offset")
	require.Equal(t, seq, ce.Seq, "seq")
	require.Contains(t, ce.Reason, reason)
	// The error names the fix: a salvage cuts at damaged rows; at offset 0
	// it would keep nothing.
	if offset > 0 {
		require.Contains(t, ce.Error(), "logtool repair --salvage")
	} else {
		require.Contains(t, ce.Error(), "restore the file from a copy")
	}
	return ce
}

// splitLines splits a log into its lines, each with its '\n' (the last one
// without when the log does not end in one).
func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return append(out, data)
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}
