package eventlog_test

// Fuzz targets of the decoders that FuzzDecodeRow, FuzzReader,
// FuzzZstdReader and FuzzSalvage do not reach directly: the data of the
// reserved events, a saved digest state, the header row, and the bounded
// reads of a log's two ends (ReadHeader, LastEvent, ReadTail, zstdframe.Frames,
// ReadZstdTail), each checked against the full Reader where the two must
// agree.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/zstdframe"
)

// boundedReaderAt serves data and records every read that reaches outside
// [lo, hi): a reader given a size (or a range) never needs one.
type boundedReaderAt struct {
	data   []byte
	lo, hi int64
	bad    []string
}

func (b *boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < b.lo || off > b.hi || int64(len(p)) > b.hi-off {
		b.bad = append(b.bad, fmt.Sprintf("%d bytes at offset %d, outside [%d, %d)", len(p), off, b.lo, b.hi))
	}
	return bytes.NewReader(b.data).ReadAt(p, off)
}

// requireLogError asserts that err is one of the typed errors of a bad log:
// a *CorruptError at an offset within the input, or a *VersionError naming
// a version that is not supported.
func requireLogError(t *testing.T, err error, size int64) {
	t.Helper()
	var ce *eventlog.CorruptError
	var ve *eventlog.VersionError
	switch {
	case errors.As(err, &ce):
		require.ErrorIs(t, err, eventlog.ErrCorrupt)
		require.GreaterOrEqual(t, ce.Offset, int64(0))
		require.LessOrEqual(t, ce.Offset, size)
		require.NotEmpty(t, ce.Reason)
	case errors.As(err, &ve):
		require.ErrorIs(t, err, eventlog.ErrVersion)
		require.NotEqual(t, int64(eventlog.Version), ve.Found)
	default:
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

// lastRowEvent is LastEvent's contract written plainly: the last event of
// the last '\n'-ended line of data that decodes as a row.
func lastRowEvent(data []byte) (eventlog.Event, bool) {
	lines := splitLines(data)
	for i := len(lines) - 1; i >= 0; i-- {
		line, complete := bytes.CutSuffix(lines[i], []byte("\n"))
		if !complete {
			continue
		}
		if evs, err := eventlog.DecodeRow(line); err == nil {
			return evs[len(evs)-1], true
		}
	}
	return eventlog.Event{}, false
}

// stretchTildes makes short fuzz inputs long: each '~' becomes up to 64 Ki
// of them (fewer when there are many, so that the input stays under 2 MiB).
// A '~' can only stand inside a JSON string of a valid row or header, so
// what is valid stays valid, only longer than the first windows of
// LastEvent and ReadHeader.
func stretchTildes(data []byte, k uint16) []byte {
	n := bytes.Count(data, []byte("~"))
	if n == 0 || k == 0 {
		return data
	}
	rep := max(1, min(int(k)+1, (2<<20)/n))
	return bytes.ReplaceAll(data, []byte("~"), bytes.Repeat([]byte("~"), rep))
}

// tildeLogs are raw logs with rows (and a header) that stretchTildes makes
// longer than the read windows, ending clean, torn and corrupt.
func tildeLogs(tb testing.TB) []string {
	h := eventlog.NewHeader(testID, testTime)
	h.Labels = map[string]string{"title": "~"}
	longHdr, err := eventlog.EncodeHeader(h)
	require.NoError(tb, err)
	long := func(seq int64) string { return row(seq, "user/message", testTime, `{"text":"a~b"}`) }
	return []string{
		hdrLine + long(0) + long(1),
		hdrLine + rows(0, 2) + long(2) + `{"seq":3,"type":"x","time":1,"data":"~`,
		hdrLine + long(0) + zeros(20) + "\n",
		hdrLine + long(0) + "garbage~\n",
		hdrLine + long(0) + `{"seq":1,"type":"x","time":1,"data":"~"}` + "\n" + "~\n",
		string(longHdr) + "\n" + long(0) + rows(1, 2),
		string(longHdr),
	}
}

// stretches are the stretchTildes factors the seeds use: none, within the
// first window, and beyond it.
var stretches = []uint16{0, 3000, 20000, 65535}

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
		last, found, err := eventlog.LastEvent(src, size, he)
		require.NoError(t, err)
		require.Empty(t, src.bad, "reads outside the range searched")
		want, wantFound := lastRowEvent(data[he:])
		require.Equal(t, wantFound, found)
		require.Equal(t, want, last)
	})
}

// LastEvent passes over a line too long to be a row, which no fuzz input
// reaches, whether it ends the log or stands before the last row.
func TestLastEventOverlongLine(t *testing.T) {
	long := strings.Repeat("x", eventlog.MaxRowSize+10)
	for _, tt := range []struct {
		data  string
		last  eventlog.Event
		found bool
	}{
		{hdrLine + rows(0, 2) + long + "\n", rowsEvents(0, 2)[1], true},
		{hdrLine + rows(0, 2) + long + "\n" + zeros(10), rowsEvents(0, 2)[1], true},
		{hdrLine + rows(0, 1) + long + "\n" + rows(1, 1), rowsEvents(0, 2)[1], true},
		{hdrLine + long + "\n", eventlog.Event{}, false},
	} {
		b := []byte(tt.data)
		last, found, err := eventlog.LastEvent(bytes.NewReader(b), int64(len(b)), int64(len(hdrLine)))
		require.NoError(t, err)
		require.Equal(t, tt.found, found)
		require.Equal(t, tt.last, last)
	}
}

// A header row longer than MaxRowSize (beyond any fuzz input) is corrupt
// for ReadHeader as for the Reader, at offset 0. Only the reason differs:
// ReadHeader reads a bounded amount, so it cannot tell a row that goes on
// past the limit from one the file cuts short.
func TestReadHeaderOverlongHeader(t *testing.T) {
	hdr := `{"format":"sessionlog","x":"` + strings.Repeat("x", eventlog.MaxRowSize) + `"}`
	for _, data := range []string{hdr + "\n" + rows(0, 1), hdr} {
		_, _, err := eventlog.ReadHeader(strings.NewReader(data), "p")
		_, rerr := eventlog.NewReader(strings.NewReader(data), eventlog.WithPath("p")).Header()
		var ce, rce *eventlog.CorruptError
		require.ErrorAs(t, err, &ce)
		require.ErrorAs(t, rerr, &rce)
		require.Equal(t, "no complete header row", ce.Reason)
		require.Equal(t, rce.Path, ce.Path)
		require.Equal(t, rce.Offset, ce.Offset)
		require.Equal(t, rce.Seq, ce.Seq)
		require.Equal(t, [2]int64{0, -1}, [2]int64{ce.Offset, ce.Seq})
	}
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

		hh, end, err := eventlog.ReadHeader(bytes.NewReader(data), "p")
		require.Equal(t, herr, err, "ReadHeader fails as the Reader does")
		tl, terr := eventlog.ReadTail(bytes.NewReader(data), size, "p")
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

// FuzzZstdFrames: walking the frame headers of any bytes reads nothing
// past size and finds contiguous frames from offset 0, each starting with
// the magic its kind says (a skippable frame as long as its size field
// says), up to end; a walk of the prefix ending at any frame's end finds
// the same frames up to it; no frame starts at end; and the full Reader's
// good prefix ends at one of the frames' ends (all of them, when the read
// is clean).
func FuzzZstdFrames(f *testing.F) {
	c := zCodec(f)
	for _, s := range zstdLogSeeds(f, c) {
		f.Add(s)
	}
	f.Add(skippableFrame(0x184D2A5F, ""))
	f.Add(cat(skippableFrame(0x184D2A50, "x"), buildZLog(c, hdrLine, rows(0, 1)).data))
	f.Add(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0x184D2A50), 1<<31))
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		src := &boundedReaderAt{data: data, hi: size}
		frames, end := zstdframe.Frames(src, size)
		require.Empty(t, src.bad, "reads outside the file")

		pos := int64(0)
		for _, fr := range frames {
			require.Equal(t, pos, fr.Offset, "frames are contiguous")
			require.GreaterOrEqual(t, fr.Len, int64(8))
			require.LessOrEqual(t, fr.Len, size-fr.Offset, "a frame lies within the file")
			magic := binary.LittleEndian.Uint32(data[fr.Offset:])
			require.Equal(t, magic&0xFFFFFFF0 == 0x184D2A50, fr.Skippable)
			if fr.Skippable {
				require.Equal(t, 8+int64(binary.LittleEndian.Uint32(data[fr.Offset+4:])), fr.Len)
			} else {
				require.Equal(t, uint32(0xFD2FB528), magic)
			}
			pos += fr.Len
		}
		require.Equal(t, pos, end)
		require.LessOrEqual(t, end, size)

		for i, fr := range frames[:min(len(frames), 16)] {
			got, gotEnd := zstdframe.Frames(bytes.NewReader(data[:fr.Offset+fr.Len]), fr.Offset+fr.Len)
			require.Equal(t, frames[:i+1], got, "a walk reads no byte past a frame's end")
			require.Equal(t, fr.Offset+fr.Len, gotEnd)
		}
		rest, _ := zstdframe.Frames(bytes.NewReader(data[end:]), size-end)
		require.Empty(t, rest, "no complete frame starts at end")

		r := eventlog.NewZstdReader(bytes.NewReader(data), c)
		for r.Next() {
		}
		requireOneEnd(t, r, len(data))
		if re := r.End(); re > 0 {
			require.True(t, slices.ContainsFunc(frames, func(fr zstdframe.Frame) bool { return fr.Offset+fr.Len == re }),
				"the Reader's end %d is a frame's end", re)
		}
		if lo, n := r.LastFrame(); n > 0 {
			require.Contains(t, frames, zstdframe.Frame{Offset: lo, Len: n})
		}
		if r.Err() == nil && r.Torn() == nil {
			require.Equal(t, size, end, "every byte of a clean log is in a frame")
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
	off, n, ok := eventlog.TailFrameAt(data[at:], at)
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
		tl, err := eventlog.ReadZstdTail(src, size, c, "p")
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
			ht, herr := eventlog.ReadZstdTailAfter(src, size, c, "p", func() zstdframe.Frame { return hint })
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

// FuzzDecodeHeader: DecodeHeader of any line fails with a *CorruptError at
// offset 0 or a *VersionError, or returns a valid header that EncodeHeader
// writes back to a line decoding to the same header.
func FuzzDecodeHeader(f *testing.F) {
	for _, s := range rawLogSeeds(f) {
		if i := bytes.IndexByte(s, '\n'); i >= 0 {
			f.Add(s[:i])
		}
	}
	for _, s := range tildeLogs(f) {
		f.Add([]byte(strings.SplitN(s, "\n", 2)[0]))
	}
	const idc = `"id":"` + testID + `","createdAt":5`
	for _, s := range []string{
		`{"format":"sessionlog","version":1,` + idc + `,"labels":{}}`,
		`{"format":"sessionlog","version":1,` + idc + `,"labels":null,"parent":null}`,
		`{"format":"sessionlog","version":1,` + idc + `,"parent":{"id":"` + testParent + `","seq":4611686018427387903,"mode":"fork"}}`,
		`{"format":"sessionlog","version":1,` + idc + `,"parent":{"id":"` + testParent + `","seq":4611686018427387904,"mode":"fork"}}`,
		`{"format":"sessionlog","version":1,` + idc + `,"parent":{"id":"` + testParent + `","seq":-1,"mode":"child"}}`,
		`{"format":"sessionlog","version":1.0,` + idc + `}`,
		`{"format":"sessionlog","version":"1",` + idc + `}`,
		`{"format":"sessionlog","version":-1,` + idc + `}`,
		`{"format":"sessionlog","version":99999999999999999999,` + idc + `}`,
		`{"format":"sessionlog","version":2,"version":1,` + idc + `}`,
		`{"FORMAT":"sessionlog","Version":1,` + idc + `}`,
		`{"format":"sessionlog","version":1,"id":"` + strings.ToLower(testID) + `","createdAt":5}`,
		`{"format":"sessionlog","version":1,` + idc + `,"createdAt":-5}`,
		"{\"format\":\"sessionlog\",\"version\":1," + idc + ",\"labels\":{\"a\":\"\xff<&>\"}}",
		`null`, `[]`, `"sessionlog"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := eventlog.DecodeHeader(line)
		if err != nil {
			requireLogError(t, err, 0)
			return
		}
		require.NoError(t, h.Validate())
		require.LessOrEqual(t, len(line), eventlog.MaxRowSize)
		require.GreaterOrEqual(t, h.FirstSeq(), int64(0))
		enc, err := eventlog.EncodeHeader(h)
		require.NoError(t, err)
		back, err := eventlog.DecodeHeader(enc)
		require.NoError(t, err)
		if len(h.Labels) == 0 {
			h.Labels = nil // no labels and empty labels are written the same
		}
		require.Equal(t, h, back)
		again, err := eventlog.EncodeHeader(back)
		require.NoError(t, err)
		require.Equal(t, enc, again)
	})
}

// testDigests returns the digests of the logs of 0, 1 and 3 events.
func testDigests() []*eventlog.Digest {
	var out []*eventlog.Digest
	for _, n := range []int{0, 1, 3} {
		d := eventlog.NewDigest()
		for _, e := range rowsEvents(0, n) {
			d.Add(e)
		}
		out = append(out, d)
	}
	return out
}

// FuzzParseCheckpoint: checkpoint data is accepted only as a JSON object
// with a valid log digest and, when present, a state naming a projection
// with a valid digest; anything else is an ErrInvalidEvent. Accepted data
// marshalled again parses to the same checkpoint.
func FuzzParseCheckpoint(f *testing.F) {
	ds := testDigests()
	log, state := ds[2].String(), ds[1].String()
	for _, s := range []string{
		`{"log":"` + log + `"}`,
		`{"log":"` + log + `","state":{"projection":"agent/v1","digest":"` + state + `"},"label":"before <refactor> & \u00e9"}`,
		`{"label":"x","log":"` + log + `","future":[1,{}]}`,
		`{"log":"` + log + `","state":null,"label":""}`,
		`{"log":"` + log + `","state":{}}`,
		`{"log":"` + log + `","state":{"projection":"","digest":"` + state + `"}}`,
		`{"log":"` + log + `","state":{"projection":"p","digest":"` + strings.ToUpper(state) + `"}}`,
		`{"log":"` + strings.ToUpper(log) + `"}`,
		`{"log":"` + log[:len(log)-1] + `"}`,
		`{"log":"` + log + `0"}`,
		`{"log":"\u0073ha256:` + log[7:] + `"}`,
		`{"LOG":"` + log + `"}`,
		`{"log":"` + log + `","log":"sha256:"}`,
		`{"log":"` + log + `","label":1}`,
		`{"log":"` + log + `"} `,
		` {"log":"` + log + `"}`,
		`{"log":"` + log + `"}x`,
		"{\"log\":\"" + log + "\",\"label\":\"\xff\"}",
		`{}`, `null`, `[]`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		c, err := eventlog.ParseCheckpoint(data)
		require.Equal(t, in, data, "input unchanged")
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			return
		}
		require.True(t, json.Valid(data))
		require.Equal(t, byte('{'), data[0])
		require.True(t, eventlog.ValidDigest(c.Log))
		if c.State != nil {
			require.NotEmpty(t, c.State.Projection)
			require.True(t, eventlog.ValidDigest(c.State.Digest))
		}
		requireRoundTrip(t, c, eventlog.ParseCheckpoint)
	})
}

// FuzzParseRollback: rollback data is accepted only as a JSON object whose
// "to" is a JSON integer >= 0 (no fraction, exponent or sign); anything
// else is an ErrInvalidEvent. Accepted data marshalled again parses to the
// same rollback.
func FuzzParseRollback(f *testing.F) {
	for _, s := range []string{
		`{"to":0}`,
		`{"to":41,"label":"retry","reason":"tool failed <badly> & \u00e9"}`,
		`{"reason":"r","to":7,"future":null}`,
		`{"to":9223372036854775807}`,
		`{"to":9223372036854775808}`,
		`{"to":-1}`, `{"to":-0}`, `{"to":1.0}`, `{"to":1e2}`, `{"to":"3"}`, `{"to":null}`, `{"to":[3]}`,
		`{"TO":3}`, `{"to":3,"to":-3}`, `{"to":-3,"to":3}`, `{"to":3,"To":null}`,
		`{"to":3,"label":2}`, `{"to":3}x`, ` {"to":3}`, `{"to":3} `, `{ "to" : 3 }`,
		"{\"to\":3,\"reason\":\"\xff\"}",
		"{\"\xf5\":0,\"tO\":0}", // a folded key beside a key that is not UTF-8 (regression)
		`{}`, `null`, `[]`, `3`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		rb, err := eventlog.ParseRollback(data)
		require.Equal(t, in, data, "input unchanged")
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			return
		}
		require.True(t, json.Valid(data))
		require.Equal(t, byte('{'), data[0])
		require.GreaterOrEqual(t, rb.To, int64(0))
		// "to" was written as exactly the integer it holds: the last member
		// whose key is exactly "to" (a map keeps keys as written; a struct
		// field would take "tO" too).
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &members))
		require.Equal(t, strconv.FormatInt(rb.To, 10), string(bytes.TrimSpace(members["to"])))
		requireRoundTrip(t, rb, eventlog.ParseRollback)
	})
}

// requireRoundTrip checks that v, marshalled, parses back to v.
func requireRoundTrip[T any](t *testing.T, v T, parse func(json.RawMessage) (T, error)) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	back, err := parse(b)
	require.NoError(t, err)
	require.Equal(t, v, back)
}

// A saved digest state with a negative next seq is refused (found by
// FuzzDigestState): no Digest is ever in that state.
func TestDigestStateNegativeNext(t *testing.T) {
	d := eventlog.NewDigest()
	d.Add(rowsEvents(0, 1)[0])
	b, err := d.MarshalBinary()
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(b, &s))
	for _, next := range []int64{-1, -1 << 63} {
		s["next"] = next
		bad, err := json.Marshal(s)
		require.NoError(t, err)
		r := eventlog.NewDigest()
		require.ErrorContains(t, r.UnmarshalBinary(bad), "negative")
		require.Zero(t, r.Next())
		require.Equal(t, eventlog.NewDigest().String(), r.String(), "a refused state changes nothing")
	}
	s["next"] = 0
	ok, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, eventlog.NewDigest().UnmarshalBinary(ok))
}

// FuzzDigestState: a saved digest state is restored only when it is one a
// Digest can be in (a sha256 state and a next seq >= 0), and then it saves
// back to the same bytes and hashes on as the original; a state that is
// refused leaves the Digest as it was.
func FuzzDigestState(f *testing.F) {
	for _, d := range testDigests() {
		b, err := d.MarshalBinary()
		require.NoError(f, err)
		f.Add(b)
		f.Add(b[:len(b)/2])
		var s map[string]any
		require.NoError(f, json.Unmarshal(b, &s))
		s["next"] = -1
		neg, err := json.Marshal(s)
		require.NoError(f, err)
		f.Add(neg)
	}
	for _, s := range []string{`{}`, `{"next":3}`, `{"next":3,"sha256":""}`, `{"next":3,"sha256":"c2hhAw=="}`, `null`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := eventlog.NewDigest()
		d.Add(rowsEvents(0, 1)[0])
		before, next := d.String(), d.Next()
		if err := d.UnmarshalBinary(b); err != nil {
			require.Equal(t, before, d.String(), "a refused state leaves the digest as it was")
			require.Equal(t, next, d.Next())
			return
		}
		require.GreaterOrEqual(t, d.Next(), int64(0))
		saved, err := d.MarshalBinary()
		require.NoError(t, err)
		d2 := eventlog.NewDigest()
		require.NoError(t, d2.UnmarshalBinary(saved))
		require.Equal(t, d.String(), d2.String())
		require.Equal(t, d.Next(), d2.Next())
		again, err := d2.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, saved, again)
		e := rowsEvents(0, 1)[0]
		c := d.Clone()
		d.Add(e)
		d2.Add(e)
		require.Equal(t, d.String(), d2.String(), "restored digests hash on alike")
		require.NotEqual(t, c.String(), d.String())
	})
}

// FuzzCheckReserved: CheckReserved accepts exactly what the parsers accept
// (and, for a rollback, only a target before its own seq); a refusal is a
// *CorruptError for that seq with an unknown offset, naming a fork as the
// fix.
func FuzzCheckReserved(f *testing.F) {
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, s := range []struct {
		typ  string
		seq  int64
		data string
	}{
		{eventlog.TypeRollback, 3, `{"to":2}`},
		{eventlog.TypeRollback, 3, `{"to":3}`},
		{eventlog.TypeRollback, 0, `{"to":0}`},
		{eventlog.TypeRollback, 9, `{}`},
		{eventlog.TypeCheckpoint, 4, `{"log":"` + digest + `"}`},
		{eventlog.TypeCheckpoint, 4, `{"log":"bad"}`},
		{eventlog.TypeCheckpoint, 0, `null`},
		{"user/message", 1, `{"to":9}`},
	} {
		f.Add(s.typ, s.seq, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, typ string, seq int64, data []byte) {
		e := eventlog.Event{Seq: seq, Type: typ, Data: data}
		ce := eventlog.CheckReserved(e)
		var ok bool
		switch typ {
		case eventlog.TypeCheckpoint:
			_, err := eventlog.ParseCheckpoint(data)
			ok = err == nil
		case eventlog.TypeRollback:
			rb, err := eventlog.ParseRollback(data)
			ok = err == nil && rb.To < seq
		default:
			ok = true
		}
		if ok {
			require.Nil(t, ce)
			return
		}
		require.NotNil(t, ce)
		require.Equal(t, seq, ce.Seq)
		require.Equal(t, int64(-1), ce.Offset)
		require.NotEmpty(t, ce.Reason)
		require.Contains(t, ce.Error(), "a writer would have refused this event")
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
			tl, err := eventlog.ReadTail(strings.NewReader(tc.data), int64(len(tc.data)), "p")
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
