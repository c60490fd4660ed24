package eventlog_test

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

// chunkings feed the same bytes to a Reader in differently sized reads.
var chunkings = []struct {
	name string
	src  func(string) io.Reader
}{
	{"whole", func(s string) io.Reader { return strings.NewReader(s) }},
	{"one byte", func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }},
	{"half", func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) }},
	{"EOF with data", func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) }},
}

// readEach reads data once per chunking and checks each result.
func readEach(t *testing.T, data string, check func(t *testing.T, res result), opts ...eventlog.ReaderOption) {
	t.Helper()
	for _, c := range chunkings {
		t.Run(c.name, func(t *testing.T) { check(t, readAll(t, c.src(data), opts...)) })
	}
}

// packedRow is the row the Encoder writes for n assistant/chunk events from
// seq first, and packedEvents those events.
func packedRow(first int64, n int) string {
	return string(eventlog.NewEncoder(nil).AppendRows(nil, packedEvents(first, n)))
}

func packedEvents(first int64, n int) []eventlog.Event {
	var evs []eventlog.Event
	for k := range int64(n) {
		evs = append(evs, ev(first+k, "assistant/chunk", testTime+100+k, `{"text":"c`+strconv.FormatInt(first+k, 10)+`"}`))
	}
	return evs
}

func concat(evss ...[]eventlog.Event) []eventlog.Event {
	var out []eventlog.Event
	for _, evs := range evss {
		out = append(out, evs...)
	}
	return out
}

func TestReaderClean(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []eventlog.Event
		next int64
	}{
		{"header only", hdrLine, nil, 0},
		{"plain rows", hdrLine + rows(0, 3), rowsEvents(0, 3), 3},
		{
			name: "packed and plain rows",
			data: hdrLine + rows(0, 1) + packedRow(1, 3) + rows(4, 1) + packedRow(5, 2),
			want: concat(rowsEvents(0, 1), packedEvents(1, 3), rowsEvents(4, 1), packedEvents(5, 2)),
			next: 7,
		},
		{"fork header: first row parent.seq+1", forkHeader(t, eventlog.ModeFork, 41) + rows(42, 2), rowsEvents(42, 2), 44},
		{"fork of seq 0", forkHeader(t, eventlog.ModeFork, 0) + rows(1, 1), rowsEvents(1, 1), 2},
		{"child header: first row 0", forkHeader(t, eventlog.ModeChild, 41) + rows(0, 2), rowsEvents(0, 2), 2},
		{"fork header, no rows", forkHeader(t, eventlog.ModeFork, 41), nil, 42},
		{
			name: "data null and absent read as nil",
			data: hdrLine + `{"seq":0,"type":"x","time":1,"data":null}` + "\n" + `{"seq":1,"time":2,"type":"x"}` + "\n" +
				`{"seq":2,"type":"x","n":2,"time":[3,4],"data":[null,{}]}` + "\n",
			want: []eventlog.Event{ev(0, "x", 1, ""), ev(1, "x", 2, ""), ev(2, "x", 3, ""), ev(3, "x", 4, "{}")},
			next: 4,
		},
		{
			name: "CRLF line ends",
			data: strings.TrimSuffix(hdrLine, "\n") + "\r\n" + strings.ReplaceAll(rows(0, 2), "\n", "\r\n"),
			want: rowsEvents(0, 2),
			next: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readEach(t, tt.data, func(t *testing.T, res result) {
				requireClean(t, res, len(tt.data), tt.want)
				require.Equal(t, tt.next, res.next)
			})
		})
	}
}

func TestReaderHeader(t *testing.T) {
	h := logfile.NewHeader(testID, testTime)
	h.Parent = &eventlog.Parent{ID: testParent, Seq: 41, Mode: eventlog.ModeFork}
	h.Labels = map[string]string{"agent": "coder", "cwd": "/src/app"}
	line, err := eventlog.EncodeHeader(h)
	require.NoError(t, err)
	data := string(line) + "\n" + rows(42, 1)

	r := eventlog.NewReader(strings.NewReader(data))
	got, err := r.Header()
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.Equal(t, int64(len(line)+1), r.End())
	require.Equal(t, int64(42), r.NextSeq())
	again, err := r.Header()
	require.NoError(t, err)
	require.Equal(t, h, again)
	require.True(t, r.Next())
	require.Equal(t, rowsEvents(42, 1)[0], r.Event())
	require.False(t, r.Next())
	require.NoError(t, r.Err())

	// A bad header: Header and Err return the same error, Next is false.
	r = eventlog.NewReader(strings.NewReader("nope\n" + rows(0, 1)))
	_, err = r.Header()
	requireCorrupt(t, err, 0, -1, "header is not a JSON object")
	require.False(t, r.Next())
	require.Equal(t, err, r.Err())
}

// A partial last row (bytes after the last '\n') is a torn tail, whatever
// byte it stops at.
func TestReaderTornPartialRow(t *testing.T) {
	base := hdrLine + rows(0, 2) + packedRow(2, 2)
	baseEvents := concat(rowsEvents(0, 2), packedEvents(2, 2))
	lasts := map[string]struct {
		row    string
		events []eventlog.Event
	}{
		"plain":  {rows(4, 1), rowsEvents(4, 1)},
		"packed": {packedRow(4, 3), packedEvents(4, 3)},
	}
	for name, last := range lasts {
		t.Run(name, func(t *testing.T) {
			for k := 0; k <= len(last.row); k++ {
				res := readBytes(t, base+last.row[:k])
				switch k {
				case 0:
					requireClean(t, res, len(base), baseEvents)
				case len(last.row):
					requireClean(t, res, len(base)+k, concat(baseEvents, last.events))
				default:
					require.NoError(t, res.err, "cut at %d", k)
					require.Equal(t, &eventlog.TornTail{Offset: int64(len(base)), Bytes: int64(k)}, res.torn, "cut at %d", k)
					require.Equal(t, baseEvents, res.events, "cut at %d", k)
					require.Equal(t, int64(len(base)), res.end, "cut at %d", k)
					require.Equal(t, int64(4), res.next, "cut at %d", k)
				}
			}
		})
	}
}

// A header cut anywhere is a bad header, never a torn tail.
func TestReaderTruncatedHeader(t *testing.T) {
	for k := 0; k < len(hdrLine); k++ {
		res := readBytes(t, hdrLine[:k])
		requireCorrupt(t, res.err, 0, -1, "no complete header row")
		require.Nil(t, res.torn)
		require.Empty(t, res.events)
		require.Equal(t, int64(0), res.end)
	}
}

func zeros(n int) string { return strings.Repeat("\x00", n) }

// Rows holding NUL bytes with no valid row after them are a torn tail that
// starts at the first of them and runs to the end of the input.
func TestReaderTornNUL(t *testing.T) {
	base := hdrLine + rows(0, 2)
	tests := []struct {
		name string
		tail string
	}{
		{"zero-filled tail without newline", zeros(4096)},
		{"a single NUL", zeros(1)},
		{"one NUL line", zeros(50) + "\n"},
		{"NUL and newline", "\x00\n"},
		{"several NUL lines", zeros(10) + "\n" + zeros(4096) + "\n" + "\x00\n"},
		{"NUL line then empty lines", zeros(10) + "\n\n\n"},
		{"NUL line then zero-filled tail", zeros(10) + "\n" + zeros(300)},
		{"NUL line then a partial row", zeros(10) + "\n" + `{"seq":2,"ty`},
		{"NUL line then a valid row without its newline", zeros(10) + "\n" + strings.TrimSuffix(rows(2, 1), "\n")},
		{"NUL line then a garbage line", zeros(10) + "\n" + "garbage\n"},
		{"row cut by NUL bytes", `{"seq":2,"type":"x"` + zeros(100) + "\n"},
		{"row cut by NUL bytes then a partial row", `{"seq":2,"type":"x"` + zeros(100) + "\n" + `{"seq":3`},
		{"NUL bytes then the end of a row", zeros(40) + `"time":5,"data":{}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readEach(t, base+tt.tail, func(t *testing.T, res result) {
				require.NoError(t, res.err)
				require.Equal(t, &eventlog.TornTail{Offset: int64(len(base)), Bytes: int64(len(tt.tail))}, res.torn)
				require.Equal(t, rowsEvents(0, 2), res.events)
				require.Equal(t, int64(len(base)), res.end)
				require.Equal(t, int64(2), res.next)
			})
		})
	}
}

func TestReaderCorrupt(t *testing.T) {
	base := hdrLine + rows(0, 2)
	off := int64(len(base))
	hdrLen := int64(len(hdrLine))
	nulHole := zeros(30) + "\n"
	tests := []struct {
		name   string
		data   string
		offset int64
		seq    int64
		reason string
		events []eventlog.Event // delivered before the error
	}{
		{
			name: "NUL hole then a valid row", data: base + nulHole + rows(2, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2),
			reason: "row holding NUL bytes followed by a valid row at offset " + strconv.Itoa(int(off)+len(nulHole)),
		},
		{
			name: "NUL hole then a valid row of another seq", data: base + nulHole + rows(9, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "row holding NUL bytes followed by a valid row",
		},
		{
			name: "NUL holes and garbage then a valid row", data: base + nulHole + "junk\n" + nulHole + rows(3, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2),
			reason: "followed by a valid row at offset " + strconv.Itoa(int(off)+2*len(nulHole)+len("junk\n")),
		},
		{
			name: "row cut by NUL bytes then a valid row", data: base + `{"seq":2,"ty` + zeros(10) + "\n" + rows(3, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "row holding NUL bytes followed by a valid row",
		},
		{
			name: "NUL hole right after the header", data: hdrLine + nulHole + rows(0, 1),
			offset: hdrLen, seq: 0, reason: "row holding NUL bytes followed by a valid row",
		},
		{
			name: "NUL hole in a fork", data: forkHeader(t, eventlog.ModeFork, 41) + nulHole + rows(42, 1),
			offset: int64(len(forkHeader(t, eventlog.ModeFork, 41))), seq: 42, reason: "row holding NUL bytes followed by a valid row",
		},
		{
			name: "garbage row in the middle", data: base + "garbage\n" + rows(2, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "not a JSON object",
		},
		{
			name: "garbage row at the end", data: base + "garbage\n",
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "not a JSON object",
		},
		{
			name: "garbage row then NUL lines", data: base + "garbage\n" + nulHole,
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "not a JSON object",
		},
		{
			name: "empty line in the middle", data: base + "\n" + rows(2, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "not a JSON object",
		},
		{
			name: "seq gap", data: base + rows(3, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "seq 3 where 2 was expected",
		},
		{
			name: "seq repeat", data: base + rows(1, 1),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "seq 1 where 2 was expected",
		},
		{
			name: "seq reorder", data: hdrLine + rows(0, 1) + rows(2, 1) + rows(1, 1),
			offset: hdrLen + int64(len(rows(0, 1))), seq: 1, events: rowsEvents(0, 1), reason: "seq 2 where 1 was expected",
		},
		{
			name: "first row not seq 0", data: hdrLine + rows(1, 2),
			offset: hdrLen, seq: 0, reason: "seq 1 where 0 was expected",
		},
		{
			name: "packed row overlapping the previous row", data: base + packedRow(1, 3),
			offset: off, seq: 2, events: rowsEvents(0, 2), reason: "seq 1 where 2 was expected",
		},
		{
			name: "gap after a packed row", data: hdrLine + packedRow(0, 3) + rows(4, 1),
			offset: hdrLen + int64(len(packedRow(0, 3))), seq: 3, events: packedEvents(0, 3), reason: "seq 4 where 3 was expected",
		},
		{
			name: "fork whose first row is 0", data: forkHeader(t, eventlog.ModeFork, 41) + rows(0, 1),
			offset: int64(len(forkHeader(t, eventlog.ModeFork, 41))), seq: 42, reason: "seq 0 where 42 was expected",
		},
		{
			name: "fork repeating the parent's seq", data: forkHeader(t, eventlog.ModeFork, 41) + rows(41, 2),
			offset: int64(len(forkHeader(t, eventlog.ModeFork, 41))), seq: 42, reason: "seq 41 where 42 was expected",
		},
		{
			name: "child continuing the parent's seqs", data: forkHeader(t, eventlog.ModeChild, 41) + rows(42, 1),
			offset: int64(len(forkHeader(t, eventlog.ModeChild, 41))), seq: 0, reason: "seq 42 where 0 was expected",
		},
		// A bad header: offset 0, seq unknown.
		{name: "empty file", data: "", offset: 0, seq: -1, reason: "no complete header row"},
		{name: "header without newline", data: strings.TrimSuffix(hdrLine, "\n"), offset: 0, seq: -1, reason: "no complete header row"},
		{name: "header not JSON", data: "hello\n" + rows(0, 1), offset: 0, seq: -1, reason: "header is not a JSON object"},
		{name: "header a JSON array", data: "[]\n", offset: 0, seq: -1, reason: "header is not a JSON object"},
		{name: "header of NUL bytes", data: zeros(64) + "\n" + rows(0, 1), offset: 0, seq: -1, reason: "header is not a JSON object"},
		{name: "empty header line", data: "\n" + rows(0, 1), offset: 0, seq: -1, reason: "header is not a JSON object"},
		{name: "header null", data: "null\n", offset: 0, seq: -1, reason: "not a sessionlog file"},
		{name: "event row as header", data: rows(0, 2), offset: 0, seq: -1, reason: "not a sessionlog file"},
		{
			name: "header of another format", data: strings.Replace(hdrLine, `"sessionlog"`, `"otherlog"`, 1),
			offset: 0, seq: -1, reason: "not a sessionlog file",
		},
		{
			name: "header without version", data: `{"format":"sessionlog","id":"` + testID + `","createdAt":1}` + "\n",
			offset: 0, seq: -1, reason: "header version is not an integer",
		},
		{
			name: "header version a string", data: strings.Replace(hdrLine, `"version":1`, `"version":"1"`, 1),
			offset: 0, seq: -1, reason: "header version is not an integer",
		},
		{
			name: "header version a float", data: strings.Replace(hdrLine, `"version":1`, `"version":1.0`, 1),
			offset: 0, seq: -1, reason: "header version is not an integer",
		},
		{
			name: "header id in lower case", data: strings.Replace(hdrLine, testID, strings.ToLower(testID), 1),
			offset: 0, seq: -1, reason: "bad header: id",
		},
		{
			name: "header createdAt float", data: strings.Replace(hdrLine, `1764450000000`, `1764450000000.5`, 1),
			offset: 0, seq: -1, reason: "bad header",
		},
		{
			name: "header parent mode bogus", data: strings.Replace(forkHeader(t, eventlog.ModeFork, 41), `"fork"`, `"spoon"`, 1),
			offset: 0, seq: -1, reason: "bad header: parent mode",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readEach(t, tt.data, func(t *testing.T, res result) {
				ce := requireCorrupt(t, res.err, tt.offset, tt.seq, tt.reason)
				require.Empty(t, ce.Path)
				require.Nil(t, res.torn)
				requireEvents(t, tt.events, res.events)
				require.Equal(t, tt.offset, res.end, "End is the offset after the last good row")
			})
			res := readBytes(t, tt.data, eventlog.WithPath("sessions/"+testID+".jsonl"))
			ce := requireCorrupt(t, res.err, tt.offset, tt.seq, tt.reason)
			require.Equal(t, "sessions/"+testID+".jsonl", ce.Path)
			require.Contains(t, ce.Error(), `"sessions/`+testID+`.jsonl"`)
		})
	}
}

// Every row DecodeRow refuses is corruption in the middle of a log, with
// the same reason.
func TestReaderCorruptRows(t *testing.T) {
	base := hdrLine + rows(0, 2)
	for _, tt := range corruptRows {
		t.Run(tt.name, func(t *testing.T) {
			res := readBytes(t, base+tt.line+"\n"+rows(2, 1))
			reason := tt.reason
			if strings.Contains(tt.line, "\x00") {
				reason = "row holding NUL bytes followed by a valid row"
			}
			requireCorrupt(t, res.err, int64(len(base)), 2, reason)
			require.Nil(t, res.torn)
			require.Equal(t, rowsEvents(0, 2), res.events)
		})
	}
}

func TestReaderVersion(t *testing.T) {
	for _, v := range []int64{0, 2, 99} {
		t.Run(strconv.FormatInt(v, 10), func(t *testing.T) {
			data := strings.Replace(hdrLine, `"version":1`, `"version":`+strconv.FormatInt(v, 10), 1) + rows(0, 1)
			res := readBytes(t, data, eventlog.WithPath("x.jsonl"))
			require.ErrorIs(t, res.err, eventlog.ErrVersion)
			require.NotErrorIs(t, res.err, eventlog.ErrCorrupt)
			var ve *eventlog.VersionError
			require.ErrorAs(t, res.err, &ve)
			require.Equal(t, v, ve.Found)
			require.Equal(t, []int{1}, ve.Supported)
			require.Equal(t, "x.jsonl", ve.Path)
			require.Contains(t, ve.Error(), "version "+strconv.FormatInt(v, 10))
			require.Contains(t, ve.Error(), "supported: [1]")
			require.Nil(t, res.torn)
			require.Empty(t, res.events)
		})
	}
}

var errBoom = errors.New("boom")

func TestReaderIOError(t *testing.T) {
	base := hdrLine + rows(0, 2)
	tests := []struct {
		name   string
		before string
		events []eventlog.Event
		end    int64
	}{
		{"while reading the header", hdrLine[:10], nil, 0},
		{"after the header", hdrLine, nil, int64(len(hdrLine))},
		{"after rows", base, rowsEvents(0, 2), int64(len(base))},
		{"in a partial row", base + `{"seq":2`, rowsEvents(0, 2), int64(len(base))},
		{"after a NUL line", base + zeros(5) + "\n", rowsEvents(0, 2), int64(len(base))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readAll(t, io.MultiReader(strings.NewReader(tt.before), iotest.ErrReader(errBoom)))
			require.ErrorIs(t, res.err, errBoom)
			require.NotErrorIs(t, res.err, eventlog.ErrCorrupt)
			require.Nil(t, res.torn)
			requireEvents(t, tt.events, res.events)
			require.Equal(t, tt.end, res.end)
		})
	}
}

// offsets returns the offset of every line of data.
func offsets(data string) []int64 {
	var out []int64
	var off int64
	for _, l := range splitLines([]byte(data)) {
		out = append(out, off)
		off += int64(len(l))
	}
	return out
}

func TestReaderWithStart(t *testing.T) {
	data := hdrLine + rows(0, 2) + packedRow(2, 3) + rows(5, 2)
	all := concat(rowsEvents(0, 2), packedEvents(2, 3), rowsEvents(5, 2))
	lineSeq := []int64{0, 1, 2, 5, 6, 7} // first seq of each row, then the next seq at the end
	offs := append(offsets(data)[1:], int64(len(data)))
	for k, off := range offs {
		seq := lineSeq[k]
		t.Run("row "+strconv.Itoa(k), func(t *testing.T) {
			r := eventlog.NewReader(strings.NewReader(data[off:]), eventlog.WithStart(off, seq))
			h, err := r.Header()
			require.NoError(t, err)
			require.Equal(t, eventlog.Header{}, h)
			require.Equal(t, off, r.End())
			require.Equal(t, seq, r.NextSeq())
			var got []eventlog.Event
			for r.Next() {
				got = append(got, r.Event())
			}
			require.NoError(t, r.Err())
			require.Nil(t, r.Torn())
			requireEvents(t, all[seq:], got)
			require.Equal(t, int64(len(data)), r.End())
			require.Equal(t, int64(7), r.NextSeq())
		})
	}
	mid := offs[2] // the packed row, seq 2

	t.Run("damage is reported at its file offset", func(t *testing.T) {
		res := readBytes(t, data[mid:]+"junk\n"+rows(7, 1), eventlog.WithStart(mid, 2))
		requireCorrupt(t, res.err, int64(len(data)), 7, "not a JSON object")
		require.Equal(t, all[2:], res.events)
	})
	t.Run("torn tail at its file offset", func(t *testing.T) {
		res := readBytes(t, data[mid:]+`{"seq":7`, eventlog.WithStart(mid, 2))
		require.NoError(t, res.err)
		require.Equal(t, &eventlog.TornTail{Offset: int64(len(data)), Bytes: int64(len(`{"seq":7`))}, res.torn)
		require.Equal(t, int64(len(data)), res.end)
	})
	t.Run("a wrong next seq is corruption", func(t *testing.T) {
		res := readBytes(t, data[mid:], eventlog.WithStart(mid, 3))
		requireCorrupt(t, res.err, mid, 3, "seq 2 where 3 was expected")
		require.Empty(t, res.events)
		require.Equal(t, mid, res.end)
	})
}

func TestReaderWithFrom(t *testing.T) {
	data := hdrLine + rows(0, 2) + packedRow(2, 3) + rows(5, 2)
	all := concat(rowsEvents(0, 2), packedEvents(2, 3), rowsEvents(5, 2))
	for from := int64(0); from <= 9; from++ {
		t.Run(strconv.FormatInt(from, 10), func(t *testing.T) {
			res := readBytes(t, data, eventlog.WithFrom(from))
			requireClean(t, res, len(data), all[min(from, int64(len(all))):])
			require.Equal(t, int64(7), res.next)
		})
	}
	t.Run("skipped rows are still checked", func(t *testing.T) {
		res := readBytes(t, hdrLine+rows(0, 1)+rows(2, 3), eventlog.WithFrom(3))
		requireCorrupt(t, res.err, int64(len(hdrLine+rows(0, 1))), 1, "seq 2 where 1 was expected")
		require.Empty(t, res.events)
	})
	t.Run("with a start", func(t *testing.T) {
		off := int64(len(hdrLine + rows(0, 2)))
		res := readBytes(t, data[off:], eventlog.WithStart(off, 2), eventlog.WithFrom(4))
		requireClean(t, res, len(data), all[4:])
	})
}

// fill is an io.Reader of n bytes c, generated as read.
type fill struct {
	c byte
	n int64
}

func (f *fill) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), f.n))
	if k == 0 {
		return 0, nil
	}
	// One byte, then doubling copies: a byte-by-byte loop costs the race
	// detector a call a byte, a third of the long-line tests' time.
	p[0] = f.c
	for i := 1; i < k; i *= 2 {
		copy(p[i:k], p[:i])
	}
	f.n -= int64(k)
	return k, nil
}

func src(parts ...any) io.Reader {
	var rs []io.Reader
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			rs = append(rs, strings.NewReader(p))
		case *fill:
			rs = append(rs, p)
		}
	}
	return io.MultiReader(rs...)
}

// Lines longer than MaxRowSize are never held whole; a Reader reads past
// them and classifies them like any bad row.
func TestReaderLongLines(t *testing.T) {
	base := hdrLine + rows(0, 2)
	off := int64(len(base))

	t.Run("row of exactly MaxRowSize", func(t *testing.T) {
		big := string(bigRow(t, 2, eventlog.MaxRowSize))
		data := base + big + "\n" + rows(3, 1)
		res := readAll(t, strings.NewReader(data))
		require.NoError(t, res.err)
		require.Nil(t, res.torn)
		require.Len(t, res.events, 4)
		require.Equal(t, big[len(`{"seq":2,"type":"x","time":1,"data":`):len(big)-1], string(res.events[2].Data))
		require.Equal(t, rowsEvents(3, 1)[0], res.events[3])
		require.Equal(t, int64(len(data)), res.end)
	})
	t.Run("valid row one byte over MaxRowSize", func(t *testing.T) {
		res := readAll(t, src(base, string(bigRow(t, 2, eventlog.MaxRowSize+1)), "\n", rows(3, 1)))
		requireCorrupt(t, res.err, off, 2, "exceeds the limit")
		require.Equal(t, rowsEvents(0, 2), res.events)
	})
	// Past the first two, the cases use a Reader whose limit is lim, not
	// MaxRowSize: the same code paths (lines spanning several reads of the
	// buffer, dropped without being held) without building lines of
	// tens of megabytes.
	const lim = 3*64<<10 + 17
	small := eventlog.ReaderOption(func(r *eventlog.Reader) { eventlog.SetReaderMaxRowSize(r, lim) })
	long := int64(2*lim + 12345)
	t.Run("long line in the middle", func(t *testing.T) {
		res := readAll(t, src(base, &fill{'x', long}, "\n", rows(2, 2)), small)
		requireCorrupt(t, res.err, off, 2, "row exceeds the limit of 196625 bytes")
		require.Equal(t, rowsEvents(0, 2), res.events)
		require.Equal(t, off, res.end)
	})
	t.Run("long line read a byte at a time", func(t *testing.T) {
		res := readAll(t, iotest.HalfReader(src(base, &fill{'x', lim + 1}, "\n", rows(2, 2))), small)
		requireCorrupt(t, res.err, off, 2, "exceeds the limit")
	})
	t.Run("long NUL line at the end", func(t *testing.T) {
		res := readAll(t, src(base, &fill{0, long}, "\n"), small)
		require.NoError(t, res.err)
		require.Equal(t, &eventlog.TornTail{Offset: off, Bytes: long + 1}, res.torn)
		require.Equal(t, rowsEvents(0, 2), res.events)
	})
	t.Run("long NUL line then a valid row", func(t *testing.T) {
		res := readAll(t, src(base, &fill{0, long}, "\n", rows(2, 1)), small)
		requireCorrupt(t, res.err, off, 2, "row holding NUL bytes followed by a valid row at offset "+strconv.FormatInt(off+long+1, 10))
	})
	t.Run("NUL line then a long line then a valid row", func(t *testing.T) {
		res := readAll(t, src(base, "\x00\n", &fill{'x', long}, "\n", rows(2, 1)), small)
		requireCorrupt(t, res.err, off, 2, "no crash left it")
	})
	// docs/format.md §9: a crash leaves rows of at most MaxRowSize bytes,
	// with NUL holes where blocks were never written; a longer run without
	// a NUL in the tail is damage. Regression: 200 MB without a newline at
	// the end read as a torn tail, and the next append cut them.
	t.Run("long line without newline at the end", func(t *testing.T) {
		res := readAll(t, src(base, &fill{'x', long}), small)
		requireCorrupt(t, res.err, off, 2, "no crash left it")
		require.Nil(t, res.torn)
		require.Equal(t, off, res.end)
	})
	t.Run("tail of exactly the limit bytes without newline", func(t *testing.T) {
		res := readAll(t, src(base, &fill{'x', lim}), small)
		require.NoError(t, res.err)
		require.Equal(t, &eventlog.TornTail{Offset: off, Bytes: lim}, res.torn)
	})
	t.Run("tail one byte over the limit without newline", func(t *testing.T) {
		res := readAll(t, iotest.HalfReader(src(base, &fill{'x', lim + 1})), small)
		requireCorrupt(t, res.err, off, 2, fmt.Sprintf("holding %d without a NUL byte", lim+1))
	})
	t.Run("long tail with NUL holes, no run over the limit", func(t *testing.T) {
		tail := []any{&fill{'x', lim}, &fill{0, 5000}, &fill{'y', lim}, &fill{0, 7}}
		res := readAll(t, src(append([]any{base}, tail...)...), small)
		require.NoError(t, res.err)
		require.Equal(t, &eventlog.TornTail{Offset: off, Bytes: 2*lim + 5007}, res.torn)
	})
	t.Run("long tail with a NUL, one run over the limit", func(t *testing.T) {
		res := readAll(t, src(base, "\x00", &fill{'x', lim + 1}), small)
		requireCorrupt(t, res.err, off, 2, "no crash left it")
	})
	t.Run("long NUL-holed line with a run over the limit, then newline", func(t *testing.T) {
		res := readAll(t, src(base, &fill{'x', lim + 1}, "\x00\n"), small)
		requireCorrupt(t, res.err, off, 2, "no crash left it")
	})
	t.Run("NUL line then a long line without newline", func(t *testing.T) {
		res := readAll(t, src(base, "\x00\n", &fill{'x', lim + 1}), small)
		requireCorrupt(t, res.err, off, 2, "no crash left it")
	})
	t.Run("long header", func(t *testing.T) {
		res := readAll(t, src(&fill{' ', long}, hdrLine, rows(0, 1)), small)
		requireCorrupt(t, res.err, 0, -1, "header")
	})
}

// Events stay intact after the Reader's buffer has been reused many times.
func TestReaderEventDataOutlivesBuffer(t *testing.T) {
	const n = 3000 // about 3 times the Reader's buffer
	data := hdrLine + rows(0, n/2) + packedRow(n/2, n/2)
	want := concat(rowsEvents(0, n/2), packedEvents(n/2, n/2))
	for _, c := range chunkings {
		t.Run(c.name, func(t *testing.T) {
			res := readAll(t, c.src(data))
			requireClean(t, res, len(data), want)
		})
	}
}

func TestReaderAll(t *testing.T) {
	base := hdrLine + rows(0, 3)
	t.Run("clean", func(t *testing.T) {
		var got []eventlog.Event
		for e, err := range eventlog.NewReader(strings.NewReader(base)).All() {
			require.NoError(t, err)
			got = append(got, e)
		}
		require.Equal(t, rowsEvents(0, 3), got)
	})
	t.Run("error comes last with a zero event", func(t *testing.T) {
		var got []eventlog.Event
		var errs []error
		for e, err := range eventlog.NewReader(strings.NewReader(base + rows(7, 1))).All() {
			got = append(got, e)
			errs = append(errs, err)
		}
		require.Len(t, got, 4)
		require.Equal(t, rowsEvents(0, 3), got[:3])
		require.Equal(t, eventlog.Event{}, got[3])
		require.Equal(t, []error{nil, nil, nil}, errs[:3])
		requireCorrupt(t, errs[3], int64(len(base)), 3, "seq 7 where 3 was expected")
	})
	t.Run("torn tail is no error", func(t *testing.T) {
		r := eventlog.NewReader(strings.NewReader(base + `{"se`))
		n := 0
		for _, err := range r.All() {
			require.NoError(t, err)
			n++
		}
		require.Equal(t, 3, n)
		require.NotNil(t, r.Torn())
	})
	t.Run("break stops early and Next goes on", func(t *testing.T) {
		r := eventlog.NewReader(strings.NewReader(base))
		for e := range r.All() {
			require.Equal(t, int64(0), e.Seq)
			break
		}
		require.True(t, r.Next())
		require.Equal(t, int64(1), r.Event().Seq)
	})
}

// The events of a packed row share one allocation for their data, each
// capped at its own length, in order (docs/design.md): one slab, however
// many events the row holds, and an append to one event's data copies it
// rather than overwrite the next one's.
func TestPackedRowDataIsOneAllocation(t *testing.T) {
	r := eventlog.NewReader(strings.NewReader(hdrLine + packedRow(0, 64)))
	var evs []eventlog.Event
	for r.Next() {
		evs = append(evs, r.Event())
	}
	require.NoError(t, r.Err())
	require.Len(t, evs, 64)
	for i := range evs {
		require.Equal(t, len(evs[i].Data), cap(evs[i].Data), "event %d: capped at its length", i)
		if i > 0 {
			prev := evs[i-1].Data
			require.Equal(t, unsafe.Add(unsafe.Pointer(unsafe.SliceData(prev)), len(prev)), unsafe.Pointer(unsafe.SliceData(evs[i].Data)),
				"event %d's data follows event %d's in one allocation", i, i-1)
		}
	}
}
