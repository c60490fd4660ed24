package projection_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// logOf lays the events' data end to end, as a log holds them, and
// returns those bytes and where each event's data starts (-1: none).
func logOf(evs []eventlog.Event) ([]byte, []int64) {
	var log []byte
	at := make([]int64, len(evs))
	for i, e := range evs {
		at[i] = -1
		if e.Data != nil {
			log = append(log, "\n{\"data\":"...)
			at[i] = int64(len(log))
			log = append(log, e.Data...)
		}
	}
	return log, at
}

// applyAt applies evs to a Locator with ApplyAt, each event's data lent
// from a buffer scribbled over once ApplyAt returns.
func applyAt(p projection.Locator, evs []eventlog.Event, log io.ReaderAt, at []int64) {
	var buf []byte
	for i, e := range evs {
		if e.Data != nil {
			buf = append(buf[:0], e.Data...)
			e.Data = buf
		}
		p.ApplyAt(e, log, at[i])
		for j := range buf {
			buf[j] = '#'
		}
	}
}

type countingReaderAt struct {
	r io.ReaderAt
	n int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	return c.r.ReadAt(p, off)
}

// sliceLog is a log whose values cannot be compared.
type sliceLog []byte

func (l sliceLog) ReadAt(p []byte, off int64) (int, error) { return bytes.NewReader(l).ReadAt(p, off) }

type failingReaderAt struct{}

func (failingReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errors.New("closed") }

// locateEvents is a session whose tool outputs and texts are large:
// results joined to their calls, one replaced by a later result, one with
// bytes json.Marshal escapes, a result whose call is unknown, texts plain
// and escaped, one replacing a streamed text, one of two text members,
// a compaction before the last turn.
func locateEvents() []eventlog.Event {
	big := func(s string) string { return fmt.Sprintf("%q", strings.Repeat(s, 400)) }
	return numbered(
		ev("user/message", `{"text":"old"}`),
		ev("tool/call", `{"id":"a","name":"read","args":{}}`),
		ev("tool/result", `{"id":"a","output":`+big("gone ")+`}`),
		ev("context/compacted", `{"summary":"s"}`),
		ev("user/message", `{"slot":"s1","text":`+big("line é\n😀 \u2028")+`,"slot":"s2"}`),
		ev("step/start", `{}`),
		ev("assistant/chunk", `{"text":"stream"}`),
		ev("assistant/message", `{"text":`+big("plain ")+`}`),
		ev("user/message", `{"text":1,"text":`+big("twice ")+`}`),
		ev("user/message", `{"text":`+big("<b> & \"q\"")+`,"slot":null}`),
		ev("user/message", `{"te\u0078t":`+big("escaped key ")+`}`),
		ev("tool/call", `{"id":"b","name":"read","args":{}}`),
		ev("tool/call", `{"id":"c","name":"read","args":{}}`),
		ev("tool/result", `{"id":"c","output":{"lines":[`+big("c <&> ")+`]}}`),
		ev("tool/result", `{"id":"b","output":`+big("first ")+`,"error":"e"}`),
		ev("tool/result", `{"id":"b","output":`+big("second ")+`}`),
		ev("tool/result", `{"id":"x","output":`+big("stray ")+`}`),
		ev("tool/result", `{"id":"c","output":"small"}`),
		ev("tool/result", `{"id":"c","output":`+big("c again ")+`}`),
		ev("tool/call", `{"id":"d","name":"read","args":{}}`),
		ev("tool/result", `{"id":"d","output":"`+strings.Repeat("larger than a window ", 20<<10)+`"}`),
		ev("step/end", ``),
	)
}

// A transcript that leaves large tool outputs in the log (ApplyAt) has the
// state of one that copies them (Apply): marshalled, written, hashed and
// returned by State; a snapshot of it restores to the same; the outputs
// are read back from the log.
func TestTranscriptApplyAt(t *testing.T) {
	evs := locateEvents()
	half := len(evs) / 2
	for _, newP := range []func() projection.Locator{
		func() projection.Locator { return projection.NewTranscript() },
		func() projection.Locator { return projection.NewConversation() },
	} {
		want := newP()
		apply(want, evs)
		b, at := logOf(evs)
		log := &countingReaderAt{r: sliceLog(b)}
		got := newP()
		applyAt(got, evs[:half], log, at[:half])
		snap, _ := got.(projection.Snapshotter).Snapshot()
		applyAt(got, evs[half:], log, at[half:])
		require.Zero(t, log.n, "%s: nothing read while applying", got.Name())

		require.Equal(t, marshal(t, want), marshal(t, got), got.Name())
		require.Positive(t, log.n, "%s: outputs read back from the log", got.Name())
		require.Less(t, log.n, 6, "%s: one read of the log serves several of its 6 or more values", got.Name())
		var w, g bytes.Buffer
		require.NoError(t, projection.WriteState(&w, want))
		require.NoError(t, projection.WriteState(&g, got))
		require.Equal(t, w.String(), g.String())
		// A log of a type that cannot be compared is read span by span.
		other := newP()
		applyAt(other, evs, sliceLog(b), at)
		require.Equal(t, marshal(t, want), marshal(t, other))

		// Restored to the snapshot taken mid-way, the rest applied again.
		require.NoError(t, got.(projection.Snapshotter).Restore(snap))
		applyAt(got, evs[half:], log, at[half:])
		require.Equal(t, marshal(t, want), marshal(t, got))

		type stater interface {
			State() projection.TranscriptState
		}
		require.Equal(t, want.(stater).State(), got.(stater).State(), got.Name())
		if tr, ok := got.(*projection.Transcript); ok {
			require.Equal(t, want.(*projection.Transcript).PrefixHashes(), tr.PrefixHashes())
			require.NoError(t, projection.CheckIndexes(tr))
		}
	}
}

// Outputs and texts the log can no longer give back fail MarshalState and
// WriteState with the offset; State records them in Degraded, in seq
// order, and drops them.
func TestTranscriptApplyAtUnreadable(t *testing.T) {
	evs := locateEvents()
	_, at := logOf(evs)
	p := projection.NewTranscript()
	applyAt(p, evs, failingReaderAt{}, at)
	_, err := p.MarshalState()
	require.ErrorContains(t, err, "at offset")
	require.ErrorContains(t, err, "closed")
	require.Error(t, projection.WriteState(io.Discard, p))

	st := p.State()
	var got []string
	for _, d := range st.Degraded {
		reason, _, _ := strings.Cut(d.Reason, ":")
		got = append(got, fmt.Sprintf("%d %s %s", d.Seq, d.Type, reason))
	}
	require.Equal(t, []string{
		"4 user/message text not read back from the log",
		"7 assistant/message text not read back from the log",
		"8 user/message text", // its own: the first text is a number
		"15 tool/result output not read back from the log",
		`16 tool/result result for unknown call "x"`,
		"16 tool/result output not read back from the log",
		"18 tool/result output not read back from the log",
		"20 tool/result output not read back from the log",
	}, got, "in seq order")
	for _, m := range st.Messages {
		if m.Seq != 3 && m.Seq != 9 && m.Seq != 10 { // copied: small, or not a text ApplyAt leaves
			require.Empty(t, m.Text, "seq %d", m.Seq)
		}
		require.Nil(t, m.Output, "seq %d", m.Seq)
	}
	_, err = p.MarshalState()
	require.NoError(t, err, "nothing left to read")
}
