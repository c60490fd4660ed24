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

// DataOffset says where each event's borrowed Data lies in a raw source:
// the source's bytes there are the Data, over rows, packed rows and every
// chunking, counted from WithStart's offset; null data, a zstd log and a
// read that ended have none.
func TestReaderDataOffset(t *testing.T) {
	const n = 3000 // about 3 times the Reader's buffer
	body := rows(0, n/2) + packedRow(n/2, n/2) + row(n, "user/message", testTime, "null") +
		row(n+1, "user/message", testTime, `{ "text" : "spaced" }`)
	src := hdrLine + body
	check := func(t *testing.T, r *eventlog.Reader, base int64) {
		t.Helper()
		events := 0
		for r.Next() {
			e, at := r.Borrow(), r.DataOffset()
			events++
			if e.Data == nil {
				require.Equal(t, int64(-1), at, "seq %d: null data", e.Seq)
				continue
			}
			require.GreaterOrEqual(t, at, base, "seq %d", e.Seq)
			require.Equal(t, string(e.Data), src[at:at+int64(len(e.Data))], "seq %d", e.Seq)
		}
		require.NoError(t, r.Err())
		require.Equal(t, n+2, events, "every event read")
		require.Equal(t, int64(-1), r.DataOffset(), "none once the read ended")
	}
	for _, c := range chunkings {
		t.Run("raw "+c.name, func(t *testing.T) { check(t, eventlog.NewReader(c.src(src)), 0) })
	}
	t.Run("start", func(t *testing.T) {
		start := int64(len(hdrLine))
		check(t, eventlog.NewReader(strings.NewReader(body), eventlog.WithStart(start, 0)), start)
	})
	t.Run("zstd", func(t *testing.T) {
		zc := zCodec(t)
		l := buildZLog(zc, hdrLine, rows(0, n/2), packedRow(n/2, n/2))
		r := eventlog.NewZstdReader(bytes.NewReader(l.data), zc)
		for r.Next() {
			require.Equal(t, int64(-1), r.DataOffset(), "seq %d: compressed", r.Borrow().Seq)
		}
		require.NoError(t, r.Err())
	})
}
