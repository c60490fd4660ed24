package logfile_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/sessionlog/sessionlog/eventlog"

	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/stretchr/testify/require"
)

// aheadLog is a zstd log of many frames of a few KiB each (text that
// compresses poorly), so that several are buffered at once and each is
// decoded ahead, with the offsets of its frames.
func aheadLog(t testing.TB, c *eventlog.ZstdCodec) zLog {
	t.Helper()
	return aheadLogOf(t, c, 12)
}

// bigZLog is a zstd log of about 5 MB in 100 frames of hard to compress
// events, and its events.
var bigZLog = sync.OnceValues(func() (zLog, []eventlog.Event) {
	c, err := eventlog.NewZstdCodec(0)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	enc := eventlog.NewEncoder(nil)
	var evs []eventlog.Event
	var flushes []string
	raw := make([]byte, 1500)
	for f := range 100 {
		var batch []eventlog.Event
		for k := range 30 {
			for i := range raw {
				raw[i] = byte(rng.Uint32())
			}
			seq := int64(f*30 + k)
			batch = append(batch, ev(seq, "tool/result", testTime+seq, `{"output":"`+base64.StdEncoding.EncodeToString(raw)+`"}`))
		}
		evs = append(evs, batch...)
		flushes = append(flushes, string(enc.AppendRows(nil, batch)))
	}
	return buildZLog(c, hdrLine, flushes...), evs
})

// boundedReaderAt serves data and records every read that reaches outside
// [lo, hi): a reader given a size (or a range) never needs one.
type boundedReaderAt struct {
	data   []byte
	lo, hi int64
	bad    []string
}

func buildZLog(c *eventlog.ZstdCodec, hdr string, flushes ...string) zLog {
	var l zLog
	for _, f := range append([]string{hdr}, flushes...) {
		l.offs = append(l.offs, int64(len(l.data)))
		l.data, _ = c.AppendFrames(l.data, []byte(f))
	}
	return l
}

// cat returns the concatenation of its arguments (strings or byte slices)
// in a new slice.
func cat(parts ...any) []byte {
	var out []byte
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p...)
		case []byte:
			out = append(out, p...)
		default:
			panic("cat: not a string or []byte")
		}
	}
	return out
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

// flip returns a copy of data with the byte at i inverted.
func flip(data []byte, i int64) []byte {
	out := bytes.Clone(data)
	out[i] ^= 0xFF
	return out
}

func forkHeader(t testing.TB, mode string, seq int64) string {
	t.Helper()
	h := logfile.NewHeader(testID, testTime)
	h.Parent = &eventlog.Parent{ID: testParent, Seq: seq, Mode: mode}
	b, err := eventlog.EncodeHeader(h)
	require.NoError(t, err)
	return string(b) + "\n"
}

// hdrLine is a minimal valid header row with its newline.
const hdrLine = `{"format":"sessionlog","version":1,"id":"` + testID + `","createdAt":1764450000000}` + "\n"

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

func packedEvents(first int64, n int) []eventlog.Event {
	var evs []eventlog.Event
	for k := range int64(n) {
		evs = append(evs, ev(first+k, "assistant/chunk", testTime+100+k, `{"text":"c`+strconv.FormatInt(first+k, 10)+`"}`))
	}
	return evs
}

// packedRow is the row the Encoder writes for n assistant/chunk events from
// seq first, and packedEvents those events.
func packedRow(first int64, n int) string {
	return string(eventlog.NewEncoder(nil).AppendRows(nil, packedEvents(first, n)))
}

// rawLogSeeds are raw logs that end every way a read can end (clean, torn,
// corrupt, a bad header): seeds of the fuzz targets that read raw logs.
func rawLogSeeds(tb testing.TB) [][]byte {
	seeds := []string{
		hdrLine + rows(0, 2) + packedRow(2, 3),
		hdrLine + rows(0, 2) + `{"seq":2,"ty`,
		hdrLine + rows(0, 1) + zeros(20) + "\n" + zeros(5),
		hdrLine + rows(0, 1) + zeros(20) + "\n" + rows(1, 1),
		hdrLine + rows(0, 1) + "junk\n" + rows(1, 1),
		hdrLine + rows(1, 1),
		forkHeader(tb, eventlog.ModeFork, 41) + rows(42, 2),
		forkHeader(tb, eventlog.ModeChild, 3) + rows(0, 1),
		`{"format":"sessionlog","version":2}` + "\n",
		`{"format":"sessionlog"}` + "\n",
		"",
		"\n\n",
	}
	for _, s := range fuzzRows {
		seeds = append(seeds, hdrLine+s+"\n"+rows(1, 1))
	}
	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		out[i] = []byte(s)
	}
	return out
}

func readZBytes(t testing.TB, c *eventlog.ZstdCodec, data []byte, opts ...eventlog.ReaderOption) result {
	t.Helper()
	return readZ(t, c, bytes.NewReader(data), opts...)
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

// requireOneEnd asserts that a finished read ended in exactly one way, at
// the place it says: an error, a torn tail, or a clean end, each starting
// just after the last good row (raw) or frame (zstd).
func requireOneEnd(t *testing.T, r *eventlog.Reader, size int) {
	t.Helper()
	err, torn, end := r.Err(), r.Torn(), r.End()
	require.False(t, err != nil && torn != nil, "both torn and failed")
	require.GreaterOrEqual(t, end, int64(0))
	require.LessOrEqual(t, end, int64(size))
	switch {
	case err != nil:
		var ce *eventlog.CorruptError
		if errors.As(err, &ce) {
			require.ErrorIs(t, err, eventlog.ErrCorrupt)
			require.Equal(t, end, ce.Offset, "damage starts after the last good data")
		} else {
			require.ErrorIs(t, err, eventlog.ErrVersion)
			require.Zero(t, end)
		}
	case torn != nil:
		require.Equal(t, end, torn.Offset, "a torn tail starts after the last good data")
		require.Equal(t, int64(size), torn.Offset+torn.Bytes, "a torn tail runs to the end")
		require.Positive(t, torn.Bytes)
	default:
		require.Equal(t, int64(size), end, "a clean read uses every byte")
	}
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

// skippableFrame returns a skippable frame with the given magic and payload.
func skippableFrame(magic uint32, payload string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
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

// stretches are the stretchTildes factors the seeds use: none, within the
// first window, and beyond it.
var stretches = []uint16{0, 3000, 20000, 65535}

// tildeLogs are raw logs with rows (and a header) that stretchTildes makes
// longer than the read windows, ending clean, torn and corrupt.
func tildeLogs(tb testing.TB) []string {
	h := logfile.NewHeader(testID, testTime)
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

// zCodec returns a codec closed when the test ends.
func zCodec(t testing.TB) *eventlog.ZstdCodec {
	t.Helper()
	c, err := eventlog.NewZstdCodec(0)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// zFrame compresses content as one frame with a checksum.
func zFrame(content string) []byte { return zEncoder().EncodeAll([]byte(content), nil) }

func zeros(n int) string { return strings.Repeat("\x00", n) }

// FuzzZstdReader checks that any input ends a read in exactly one way,
// at a consistent place, with contiguous seqs, whatever way it is fed.
// zstdLogSeeds are zstd logs that end every way a read can end (clean,
// torn, corrupt, a bad header), with and without skippable and tail
// frames: seeds of the fuzz targets that read zstd logs.
func zstdLogSeeds(tb testing.TB, c *eventlog.ZstdCodec) [][]byte {
	l := buildZLog(c, hdrLine, rows(0, 2), packedRow(2, 3), rows(5, 1))
	n := int64(len(l.data))
	tail := zstdframe.AppendTail(nil, n, l.offs[3], n-l.offs[3], 6)
	seeds := [][]byte{
		l.data,
		cat(l.data, tail),
		cat(l.data[:l.offs[2]], skippableFrame(0x184D2A50, "i"), l.data[l.offs[2]:], tail),
		l.data[:n-3],
		flip(l.data, n-1),
		flip(l.data, l.offs[3]-1),
		cat(l.data, make([]byte, 9)),
		cat(l.data[:l.offs[2]], make([]byte, 9), l.data[l.offs[2]:]),
		cat(l.data, tail[:11]),
		cat(l.data, zFrame(rows(6, 1)+`{"seq":7`)),
		cat(l.data, zFrame(rows(7, 1))),
		cat(l.data, zFrame(""), zFrame(rows(6, 1))),
		zFrame(hdrLine + rows(0, 2)),
		buildZLog(c, forkHeader(tb, eventlog.ModeFork, 41), rows(42, 2)).data,
		buildZLog(c, strings.Replace(hdrLine, `"version":1`, `"version":2`, 1)).data,
		{},
		{0x28, 0xB5, 0x2F, 0xFD, 0x00},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3 {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		seeds = append(seeds, b)
	}
	return seeds
}

const (
	testID     = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	testParent = "01JDX2ZJ6M4B2T8V0C3N5Q7R9S"
	testTime   = 1764450000000
)

// aheadLogOf is aheadLog with the given number of flushes.
func aheadLogOf(t testing.TB, c *eventlog.ZstdCodec, flushes int) zLog {
	t.Helper()
	rng := rand.New(rand.NewPCG(4, 2))
	var rows []string
	seq := int64(0)
	for range flushes {
		var b strings.Builder
		for range 4 {
			text := make([]byte, 800+rng.IntN(800))
			for i := range text {
				text[i] = 'a' + byte(rng.IntN(26))
			}
			b.WriteString(row(seq, "tool/result", testTime+seq, `{"out":"`+string(text)+`"}`))
			seq++
		}
		rows = append(rows, b.String())
	}
	l := buildZLog(c, hdrLine, rows...)
	for i := 2; i < len(l.offs); i++ {
		require.Greater(t, l.offs[i]-l.offs[i-1], int64(2<<10), "frame %d is decoded ahead by default", i-1)
	}
	return l
}

// ev builds an event; data "" means nil (absent).
func ev(seq int64, typ string, time int64, data string) eventlog.Event {
	e := eventlog.Event{Seq: seq, Type: typ, Time: time}
	if data != "" {
		e.Data = json.RawMessage(data)
	}
	return e
}

// Seeds shared by the fuzz targets (testdata/fuzz holds a few more).
var fuzzRows = []string{
	`{"seq":7,"type":"tool/call","time":1764450000123,"data":{"id":"c1","name":"read_file","args":{"path":"a.go"}}}`,
	`{"seq":12,"type":"assistant/chunk","n":3,"time":[1764450000200,1764450000201,1764450000205],"data":[{"text":"He"},{"text":"llo"},{"text":"!"}]}`,
	`{"data":null,"time":0,"type":"tool\/call","seq":0}`,
	` { "seq" : 1 , "type" : "x" , "n" : 2 , "time" : [ 1 , 2 ] , "data" : [ null , [ ] ] } `,
	`{"seq":0,"type":"x","time":1,"data":"\u0041"}`,
	`{"seq":0,"type":"x","time":1.0}`,
	`{"seq":0,"type":"x","n":1000000,"time":[1],"data":[1]}`,
	"\x00\x00\x00\x00",
	hdrLine[:len(hdrLine)-1],
}

// readZ reads a zstd log to its end and checks that the read ends in
// exactly one way and stays ended.
func readZ(t testing.TB, c *eventlog.ZstdCodec, src io.Reader, opts ...eventlog.ReaderOption) result {
	t.Helper()
	r := eventlog.NewZstdReader(src, c, opts...)
	var res result
	for r.Next() {
		res.events = append(res.events, r.Event())
	}
	res.err, res.torn, res.end, res.next = r.Err(), r.Torn(), r.End(), r.NextSeq()
	require.False(t, r.Next(), "Next after the end")
	require.Equal(t, res.err, r.Err())
	require.False(t, res.err != nil && res.torn != nil, "a read ends in an error or a torn tail, not both: %v, %+v", res.err, res.torn)
	return res
}

// result is everything a read ends with.
type result struct {
	events []eventlog.Event
	err    error
	torn   *eventlog.TornTail
	end    int64
	next   int64
}

// row is canon(e) plus '\n': the unpacked row a writer stores.
func row(seq int64, typ string, time int64, data string) string {
	return string(eventlog.AppendCanon(nil, ev(seq, typ, time, data))) + "\n"
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

// zLog is a zstd log as a writer makes it: the header alone in the first
// frame, then the frames of each flush.
type zLog struct {
	data []byte
	offs []int64 // where each flush starts; offs[0] = 0, the header frame
}

func (b *boundedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < b.lo || off > b.hi || int64(len(p)) > b.hi-off {
		b.bad = append(b.bad, fmt.Sprintf("%d bytes at offset %d, outside [%d, %d)", len(p), off, b.lo, b.hi))
	}
	return bytes.NewReader(b.data).ReadAt(p, off)
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// zEncoder is the library's own encoder, used to build frames the codec
// would not write (content that is not whole rows).
var zEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(err)
	}
	return e
})
