package eventlog_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// borrowAll reads r through Borrow, keeping a copy of each event made
// before the next Next, and checks that each borrowed Data is capped.
func borrowAll(t *testing.T, r *eventlog.Reader) []eventlog.Event {
	t.Helper()
	var got []eventlog.Event
	for r.Next() {
		e := r.Borrow()
		require.Equal(t, len(e.Data), cap(e.Data), "seq %d: borrowed data capped at its length", e.Seq)
		e.Data = bytes.Clone(e.Data)
		got = append(got, e)
	}
	require.NoError(t, r.Err())
	require.Equal(t, eventlog.Event{}, r.Borrow(), "nothing borrowed once the read ended")
	return got
}

// Borrow yields what Event yields, without a copy: over rows and packed
// rows, raw under every chunking and zstd, with WithFrom skipping some.
func TestReaderBorrow(t *testing.T) {
	const n = 3000 // about 3 times the Reader's buffer
	rowsData := rows(0, n/2) + packedRow(n/2, n/2) + row(n, "user/message", testTime, "null")
	want := concat(rowsEvents(0, n/2), packedEvents(n/2, n/2), []eventlog.Event{ev(n, "user/message", testTime, "")})
	for _, c := range chunkings {
		t.Run("raw "+c.name, func(t *testing.T) {
			got := borrowAll(t, eventlog.NewReader(c.src(hdrLine+rowsData)))
			requireEvents(t, want, got)
		})
	}
	t.Run("from", func(t *testing.T) {
		got := borrowAll(t, eventlog.NewReader(strings.NewReader(hdrLine+rowsData), eventlog.WithFrom(n/2+5)))
		requireEvents(t, want[n/2+5:], got)
	})
	t.Run("zstd", func(t *testing.T) {
		zc := zCodec(t)
		l := buildZLog(zc, hdrLine, rows(0, n/2), packedRow(n/2, n/2)+row(n, "user/message", testTime, "null"))
		got := borrowAll(t, eventlog.NewZstdReader(bytes.NewReader(l.data), zc))
		requireEvents(t, want, got)
	})
}

// Event still hands out data of the caller's own after Borrow lent the
// same event's: each call a copy, sharing nothing with the Reader.
func TestReaderEventAfterBorrow(t *testing.T) {
	r := eventlog.NewReader(io.MultiReader(strings.NewReader(hdrLine+rows(0, 2)), strings.NewReader(packedRow(2, 3))))
	var kept []eventlog.Event
	for r.Next() {
		lent := r.Borrow()
		e, again := r.Event(), r.Event()
		require.Equal(t, lent, e)
		require.Equal(t, e, again)
		if len(e.Data) > 0 {
			require.NotSame(t, &lent.Data[0], &e.Data[0], "seq %d: Event copies", e.Seq)
			require.NotSame(t, &e.Data[0], &again.Data[0], "seq %d: each call a copy", e.Seq)
		}
		kept = append(kept, e)
	}
	require.NoError(t, r.Err())
	requireEvents(t, concat(rowsEvents(0, 2), packedEvents(2, 3)), kept)
}
