package logfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessionlog/sessionlog/eventlog"

	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/stretchr/testify/require"
)

// FuzzLastEvent: LastEvent over any bytes, from any header end, returns
// exactly the last event of the last '\n'-ended line that decodes as a row
// (lastRowEvent), and reads nothing outside [headerEnd, size).
func FuzzLastEvent(f *testing.F) {
	for _, s := range rawLogSeeds(f) {
		f.Add(s, uint32(bytes.IndexByte(s, '\n')+1), uint16(0))
		f.Add(s, uint32(0), uint16(0))
	}
	for _, s := range tildeLogs(f) {
		for _, k := range stretches {
			f.Add([]byte(s), uint32(len(hdrLine)), k)
		}
	}
	f.Add([]byte(hdrLine+rows(0, 3)), uint32(len(hdrLine)+5), uint16(0)) // a header end inside a row
	f.Add([]byte(hdrLine+rows(0, 1)+`{"seq":1,"type":"x","time":1,"data":null}`+"\n"), uint32(len(hdrLine)), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, headerEnd uint32, k uint16) {
		data = stretchTildes(data, k)
		size := int64(len(data))
		he := int64(headerEnd)
		if he > size {
			he %= size + 1
		}
		src := &boundedReaderAt{data: data, lo: he, hi: size}
		last, found, err := logfile.LastEvent(src, size, he)
		require.NoError(t, err)
		require.Empty(t, src.bad, "reads outside the range searched")
		want, wantFound := lastRowEvent(data[he:])
		require.Equal(t, wantFound, found)
		require.Equal(t, want, last)
	})
}

// LastEvent passes over a line too long to be a row, which no fuzz input
// reaches, whether it ends the log or stands before the last row. The real
// limit once, then every case at a limit of a few read windows
// (LastEventLimit) with a line four times as long, so that a window holds
// more than the limit of it and LastEvent passes over the rest unread.
func TestLastEventOverlongLine(t *testing.T) {
	const lim = 3*(16<<10) + 17
	long := strings.Repeat("x", 4*lim)
	for _, tt := range []struct {
		name  string
		limit int64
		data  string
		last  eventlog.Event
		found bool
	}{
		{"MaxRowSize, before the last row", eventlog.MaxRowSize, hdrLine + rows(0, 1) + strings.Repeat("x", eventlog.MaxRowSize+10) + "\n" + rows(1, 1), rowsEvents(0, 2)[1], true},
		{"ends the log", lim, hdrLine + rows(0, 2) + long + "\n", rowsEvents(0, 2)[1], true},
		{"ends the log, NUL after", lim, hdrLine + rows(0, 2) + long + "\n" + zeros(10), rowsEvents(0, 2)[1], true},
		{"before the last row", lim, hdrLine + rows(0, 1) + long + "\n" + rows(1, 1), rowsEvents(0, 2)[1], true},
		{"no row", lim, hdrLine + long + "\n", eventlog.Event{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.data)
			last, found, err := logfile.LastEventLimit(bytes.NewReader(b), int64(len(b)), int64(len(hdrLine)), tt.limit)
			require.NoError(t, err)
			require.Equal(t, tt.found, found)
			require.Equal(t, tt.last, last)
		})
	}
}

// A header row longer than MaxRowSize (beyond any fuzz input) is corrupt
// for ReadHeader as for the Reader, at offset 0. Only the reason differs:
// ReadHeader reads a bounded amount, so it cannot tell a row that goes on
// past the limit from one the file cuts short. The real limit once, then
// the same path at a limit of a few read windows (ReadHeaderLimit), where
// a row of limit bytes reads and one of limit+1 does not.
func TestReadHeaderOverlongHeader(t *testing.T) {
	const lim = 3*(4<<10) + 17
	row := func(n int) string { // a header row of n bytes
		h := `{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1,"x":"`
		return h + strings.Repeat("x", n-len(h)-2) + `"}`
	}
	for _, tc := range []struct {
		name  string
		limit int64
		data  string
	}{
		{"MaxRowSize, rows after", eventlog.MaxRowSize, row(eventlog.MaxRowSize+1) + "\n" + rows(0, 1)},
		{"limit+1, rows after", lim, row(lim+1) + "\n" + rows(0, 1)},
		{"no end", lim, row(3 * lim)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := logfile.ReadHeaderLimit(strings.NewReader(tc.data), "p", tc.limit)
			ce := requireCorrupt(t, err, 0, -1, "no complete header row")
			require.Equal(t, "p", ce.Path)
			if tc.limit == eventlog.MaxRowSize {
				_, rerr := eventlog.NewReader(strings.NewReader(tc.data), eventlog.WithPath("p")).Header()
				var rce *eventlog.CorruptError
				require.ErrorAs(t, rerr, &rce)
				require.Equal(t, [3]any{rce.Path, rce.Offset, rce.Seq}, [3]any{ce.Path, ce.Offset, ce.Seq})
			}
		})
	}
	h, end, err := logfile.ReadHeaderLimit(strings.NewReader(row(lim)+"\n"+rows(0, 1)), "p", lim)
	require.NoError(t, err, "a header row of the limit reads")
	require.Equal(t, int64(lim+1), end)
	require.Equal(t, "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", h.ID)
}

// FuzzReadTail: ReadHeader and ReadTail over any raw bytes agree with the
// full Reader: the same header or the same error (for a header row within
// MaxRowSize: see TestReadHeaderOverlongHeader); the header's end just
// past the first '\n'; the last event as LastEvent's contract says and,
// when the Reader ends clean or torn, the last event the Reader yields;
// the bytes after the last row judged as the Reader judges them (one
// classifier: regression, a header and a 20 MB line without '\n' was a
// healthy empty log to ReadTail and corruption to the Reader).
func FuzzReadTail(f *testing.F) {
	for _, s := range rawLogSeeds(f) {
		f.Add(s, uint16(0))
	}
	for _, s := range tildeLogs(f) {
		for _, k := range stretches {
			f.Add([]byte(s), k)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, k uint16) {
		data = stretchTildes(data, k)
		size := int64(len(data))
		r := eventlog.NewReader(bytes.NewReader(data), eventlog.WithPath("p"))
		h, herr := r.Header()
		var evs []eventlog.Event
		for r.Next() {
			evs = append(evs, r.Event())
		}
		requireOneEnd(t, r, len(data))

		hh, end, err := logfile.ReadHeader(bytes.NewReader(data), "p")
		require.Equal(t, herr, err, "ReadHeader fails as the Reader does")
		tl, terr := logfile.ReadTail(bytes.NewReader(data), size, "p")
		if herr != nil {
			require.Equal(t, herr, terr, "ReadTail fails as the Reader does")
			requireLogError(t, herr, size)
			return
		}
		// What follows the last row is classified as the Reader does: the
		// same verdict when the Reader's damage lies there (or there is
		// none), and no verdict but on those bytes otherwise.
		var rce, tce *eventlog.CorruptError
		switch {
		case r.Err() == nil:
			require.NoError(t, terr, "a clean or torn log's tail is no error")
		case errors.As(r.Err(), &rce) && rce.Offset >= tl.End:
			require.Equal(t, r.Err(), terr, "damage after the last row: ReadTail fails as the Reader does")
		case terr != nil:
			require.ErrorAs(t, terr, &tce)
			require.GreaterOrEqual(t, tce.Offset, tl.End, "ReadTail judges only the bytes after the last row")
		}
		require.Equal(t, h, hh)
		require.Equal(t, int64(bytes.IndexByte(data, '\n')+1), end)
		require.Equal(t, h, tl.Header)

		want, found := lastRowEvent(data[end:])
		require.Equal(t, found, tl.Found)
		require.Equal(t, want, tl.Last)
		if r.Err() == nil { // clean or torn: the rows before the end are the log
			require.Equal(t, len(evs) > 0, tl.Found)
			if tl.Found {
				require.Equal(t, evs[len(evs)-1], tl.Last)
			}
		}
	})
}

// tailNamed returns the data frame named by a tail frame at the very end of
// data, when ReadZstdTail goes by it: one that stands at its own offset and
// names a whole data frame before it.
func tailNamed(data []byte) (zstdframe.Frame, bool) {
	at := int64(len(data)) - zstdframe.TailSize
	if at < 0 {
		return zstdframe.Frame{}, false
	}
	off, n, ok := zstdframe.ParseTail(data[at:], at)
	if !ok || off < 0 || n <= 0 || off > at-n {
		return zstdframe.Frame{}, false
	}
	frames, _ := zstdframe.Frames(bytes.NewReader(data[off:off+n]), n)
	if len(frames) != 1 || frames[0].Len != n || frames[0].Skippable {
		return zstdframe.Frame{}, false
	}
	return zstdframe.Frame{Offset: off, Len: n}, true
}

// FuzzReadZstdTail: ReadZstdTail over any bytes reads nothing past size,
// fails only with a typed error, never reads a header the Reader refuses,
// and agrees with the Reader on the header; and when the Reader ends clean
// or torn, ReadZstdTail succeeds (if the header is in the first data frame,
// as docs/format.md §5 says) with the Reader's last event. The exception is a tail
// frame that names a frame other than the log's last frame with rows:
// ReadZstdTail is documented to trust it, and no writer writes one.
func FuzzReadZstdTail(f *testing.F) {
	c := zCodec(f)
	for _, s := range zstdLogSeeds(f, c) {
		f.Add(s)
	}
	l := buildZLog(c, hdrLine, rows(0, 2), packedRow(2, 3))
	n := int64(len(l.data))
	withTail := func(data []byte, off, n int64) []byte {
		return zstdframe.AppendTail(bytes.Clone(data), int64(len(data)), off, n, 5)
	}
	empty := cat(l.data, zFrame(""))
	hdrOnly := buildZLog(c, hdrLine).data
	for _, s := range [][]byte{
		withTail(l.data, l.offs[2], n-l.offs[2]),
		withTail(l.data, l.offs[1], l.offs[2]-l.offs[1]), // names an earlier frame
		withTail(l.data, 0, l.offs[1]),                   // names the header frame
		withTail(empty, n, int64(len(empty))-n),          // names an empty last frame
		withTail(empty, l.offs[2], n-l.offs[2]),          // names the last frame with rows
		withTail(hdrOnly, 0, int64(len(hdrOnly))),
		cat(withTail(l.data[:l.offs[2]], l.offs[1], l.offs[2]-l.offs[1]), l.data[l.offs[2]:]),
		withTail(flip(l.data, n-1), l.offs[2], n-l.offs[2]),
		cat(zFrame(""), l.data),
		cat(skippableFrame(0x184D2A50, "x"), l.data),
		zFrame(hdrLine + rows(0, 2)),
		zFrame(hdrLine),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		src := &boundedReaderAt{data: data, hi: size}
		tl, err := logfile.ReadZstdTail(src, size, c, "p")
		require.Empty(t, src.bad, "reads outside the file")

		r := eventlog.NewZstdReader(bytes.NewReader(data), c, eventlog.WithPath("p"))
		h, herr := r.Header()
		var evs []eventlog.Event
		for r.Next() {
			evs = append(evs, r.Event())
		}
		requireOneEnd(t, r, len(data))
		if err != nil {
			requireLogError(t, err, size)
		} else {
			require.NoError(t, herr, "ReadZstdTail read a header the Reader refuses")
			require.Equal(t, h, tl.Header)
			if !tl.Found {
				require.Equal(t, eventlog.Event{}, tl.Last)
			} else {
				require.NoError(t, tl.Last.Validate())
			}
		}

		if r.Err() != nil {
			return // corrupt: a bounded read does not look for it
		}
		frames, _ := zstdframe.Frames(bytes.NewReader(data), size)
		// Told of any frame (a hint, from an earlier read), or of bytes that
		// are none, ReadZstdTailAfter says what ReadZstdTail says.
		hints := append([]zstdframe.Frame{{Offset: 1, Len: 9}, {Offset: size, Len: 1}}, frames[:min(len(frames), 6)]...)
		for _, hint := range hints {
			ht, herr := logfile.ReadZstdTailAfter(src, size, c, "p", func() zstdframe.Frame { return hint })
			require.Equal(t, tl, ht, "hint %+v", hint)
			require.Equal(t, fmt.Sprint(err), fmt.Sprint(herr), "hint %+v", hint)
		}
		if named, used := tailNamed(data); used {
			lastOff, _ := r.LastFrame()
			if !slices.Contains(frames, named) || named.Offset < lastOff {
				return // a tail frame that does not name the last frame with rows
			}
		}
		if err != nil {
			// Refused where the Reader reads on: only a log whose first data
			// frame does not hold the header (an empty frame before it).
			i := slices.IndexFunc(frames, func(fr zstdframe.Frame) bool { return !fr.Skippable })
			require.GreaterOrEqual(t, i, 0, "the Reader read a header from no frame")
			firstEnd := frames[i].Offset + frames[i].Len
			_, ferr := eventlog.NewZstdReader(bytes.NewReader(data[:firstEnd]), c).Header()
			require.Error(t, ferr, "ReadZstdTail fails (%v) where the Reader reads the header from the first data frame", err)
			return
		}
		require.Equal(t, len(evs) > 0, tl.Found)
		if tl.Found {
			require.Equal(t, evs[len(evs)-1], tl.Last)
		}
	})
}

// ReadTail judges the bytes after the last row as the Reader does: a torn
// tail is passed over, a tail no crash leaves is the Reader's
// *CorruptError. Regression: a header-only log ending in 20 MB without a
// '\n' was a healthy empty log to Stat (stat, ls) and corrupt to a full
// read (cat, append).
func TestReadTailClassifiesTheRest(t *testing.T) {
	over := strings.Repeat("x", eventlog.MaxRowSize+1)
	for _, tc := range []struct {
		name, data string
		corrupt    bool
	}{
		{"header, a tail over the limit without a newline", hdrLine + strings.Repeat("x", 20<<20), true},
		{"rows, a tail over the limit without a newline", hdrLine + rows(0, 2) + over, true},
		{"rows, a partial row", hdrLine + rows(0, 2) + `{"seq":2,"ty`, false},
		{"rows, NUL holes", hdrLine + rows(0, 2) + "\x00\x00\x00\n\x00", false},
		{"rows, a tail of MaxRowSize bytes", hdrLine + rows(0, 2) + over[1:], false},
		{"rows, a bad row with a newline", hdrLine + rows(0, 2) + "not a row\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := eventlog.NewReader(strings.NewReader(tc.data), eventlog.WithPath("p"))
			for r.Next() {
			}
			tl, err := logfile.ReadTail(strings.NewReader(tc.data), int64(len(tc.data)), "p")
			if !tc.corrupt {
				require.NoError(t, r.Err())
				require.NoError(t, err)
				return
			}
			var ce *eventlog.CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, r.Err(), err, "the Reader's verdict, word for word")
			require.Equal(t, tl.End, ce.Offset)
		})
	}
}

func TestReadZstdTail(t *testing.T) {
	c := zCodec(t)
	big, bigEvs := bigZLog()
	bigN := int64(len(big.data))
	require.Greater(t, bigN, int64(4<<20))
	lastBig := len(big.offs) - 1
	bigWithTail := zstdframe.AppendTail(bytes.Clone(big.data), bigN, big.offs[lastBig], bigN-big.offs[lastBig], int64(len(bigEvs)))

	t.Run("through the tail frame, a bounded read", func(t *testing.T) {
		src := &countingReaderAt{r: bytes.NewReader(bigWithTail)}
		tl, err := logfile.ReadZstdTail(src, int64(len(bigWithTail)), c, "p")
		require.NoError(t, err)
		require.True(t, tl.Found)
		require.Equal(t, testID, tl.Header.ID)
		require.Equal(t, bigEvs[len(bigEvs)-1], tl.Last)
		lastLen := bigN - big.offs[lastBig]
		require.Less(t, src.n, big.offs[1]+lastLen+1024, "reads the header frame, the tail frame and the last frame")
		require.Less(t, src.n, int64(len(bigWithTail))/20)
	})

	t.Run("without a tail frame, walking frame headers", func(t *testing.T) {
		src := &countingReaderAt{r: bytes.NewReader(big.data)}
		tl, err := logfile.ReadZstdTail(src, bigN, c, "p")
		require.NoError(t, err)
		require.True(t, tl.Found)
		require.Equal(t, bigEvs[len(bigEvs)-1], tl.Last)
		require.Less(t, src.n, bigN/10, "frame headers are walked, not decompressed")
	})

	small := buildZLog(c, hdrLine, rows(0, 2), packedRow(2, 3), rows(5, 2)+packedRow(7, 2))
	n := int64(len(small.data))
	lastOff := small.offs[3]
	withTail := func(data []byte, lastOff, lastLen, next int64) []byte {
		return zstdframe.AppendTail(bytes.Clone(data), int64(len(data)), lastOff, lastLen, next)
	}
	hdrOnly := buildZLog(c, hdrLine).data
	fork := buildZLog(c, forkHeader(t, eventlog.ModeFork, 41), rows(42, 3))
	tests := []struct {
		name  string
		data  []byte
		last  eventlog.Event
		found bool
	}{
		{"tail frame", withTail(small.data, lastOff, n-lastOff, 9), packedEvents(7, 2)[1], true},
		{"no tail frame", small.data, packedEvents(7, 2)[1], true},
		{"a stale tail frame in the middle", cat(withTail(small.data[:lastOff], small.offs[2], lastOff-small.offs[2], 5), small.data[lastOff:]), packedEvents(7, 2)[1], true},
		{"a tail frame at the end naming the wrong offset", cat(small.data, zstdframe.AppendTail(nil, 3, lastOff, n-lastOff, 9)), packedEvents(7, 2)[1], true},
		{"a skippable frame at the end", cat(small.data, skippableFrame(0x184D2A50, "idx")), packedEvents(7, 2)[1], true},
		// Found by a seed of FuzzReadZstdTail: the tail frame's path gave no last event.
		{"a tail frame naming an empty last frame", withTail(cat(small.data, zFrame("")), n, int64(len(zFrame(""))), 9), packedEvents(7, 2)[1], true},
		{"a tail frame naming the last frame with rows, an empty one after it", withTail(cat(small.data, zFrame("")), lastOff, n-lastOff, 9), packedEvents(7, 2)[1], true},
		{"last frame torn", small.data[:n-5], packedEvents(2, 3)[2], true},
		{"last frame torn after a tail frame", cat(withTail(small.data[:lastOff], small.offs[2], lastOff-small.offs[2], 5), small.data[lastOff:n-5]), packedEvents(2, 3)[2], true},
		{"last frame fails its checksum", flip(small.data, n-1), packedEvents(2, 3)[2], true},
		{"trailing zero bytes", cat(small.data, make([]byte, 100)), packedEvents(7, 2)[1], true},
		{"header only", hdrOnly, eventlog.Event{}, false},
		{"header only, tail frame", withTail(hdrOnly, 0, int64(len(hdrOnly)), 0), eventlog.Event{}, false},
		{"header only, torn frame after it", cat(hdrOnly, zFrame(rows(0, 1))[:9]), eventlog.Event{}, false},
		{"header and rows in one frame", zFrame(hdrLine + rows(0, 3)), rowsEvents(0, 3)[2], true},
		// Found writing FuzzReadZstdTail: skippable frames may stand anywhere
		// (docs/format.md §5), and the header frame was looked for at offset 0 only.
		{"a skippable frame before the header frame", cat(skippableFrame(0x184D2A50, "idx"), small.data), packedEvents(7, 2)[1], true},
		{"skippable frames before a header frame holding rows", cat(skippableFrame(0x184D2A5F, ""), skippableFrame(0x184D2A50, "i"), zFrame(hdrLine+rows(0, 3))), rowsEvents(0, 3)[2], true},
		{"a skippable frame before the header frame alone", cat(skippableFrame(0x184D2A50, "idx"), hdrOnly), eventlog.Event{}, false},
		{"fork", fork.data, rowsEvents(42, 3)[2], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := logfile.ReadZstdTail(bytes.NewReader(tt.data), int64(len(tt.data)), c, "p")
			require.NoError(t, err)
			require.Equal(t, tt.found, tl.Found)
			require.Equal(t, tt.last, tl.Last)
			r := eventlog.NewZstdReader(bytes.NewReader(tt.data), c)
			h, err := r.Header()
			require.NoError(t, err)
			require.Equal(t, h, tl.Header)
			// The Reader agrees on the last event.
			var last eventlog.Event
			for r.Next() {
				last = r.Event()
			}
			require.NoError(t, r.Err())
			require.Equal(t, tt.last, last)
		})
	}

	t.Run("no complete first frame", func(t *testing.T) {
		for _, data := range [][]byte{nil, small.data[:10], flip(small.data, small.offs[1]-1)} {
			_, err := logfile.ReadZstdTail(bytes.NewReader(data), int64(len(data)), c, "p")
			requireCorrupt(t, err, 0, -1, "")
		}
	})

	// The tail frame names the last data frame: when it does not decode,
	// the log is damaged, and the previous frame's event is not the last.
	t.Run("the frame the tail frame names fails its checksum", func(t *testing.T) {
		data := withTail(flip(small.data, n-1), lastOff, n-lastOff, 9)
		_, err := logfile.ReadZstdTail(bytes.NewReader(data), int64(len(data)), c, "p")
		requireCorrupt(t, err, lastOff, -1, "")
		res := readZBytes(t, c, data)
		requireCorrupt(t, res.err, lastOff, 5, "fails its checksum")
	})
}
