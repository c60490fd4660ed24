package eventlog_test

// Tests of the zstd encoding (docs/format.md §5, §9): frames written by ZstdCodec and
// read by NewZstdReader, ReadZstdTail and zstdframe.Frames, torn tails and
// corruption told apart frame by frame.

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
)

// zCodec returns a codec closed when the test ends.
func zCodec(t testing.TB) *eventlog.ZstdCodec {
	t.Helper()
	c, err := eventlog.NewZstdCodec(0)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// zEncoder and zDecoder are the library's own encoder and decoder, used to
// build frames the codec would not write (content that is not whole rows)
// and to check what the codec wrote.
var (
	zEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithEncoderLevel(zstd.SpeedFastest))
		if err != nil {
			panic(err)
		}
		return e
	})
	zDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil)
		if err != nil {
			panic(err)
		}
		return d
	})
)

// zFrame compresses content as one frame with a checksum.
func zFrame(content string) []byte { return zEncoder().EncodeAll([]byte(content), nil) }

// skippableFrame returns a skippable frame with the given magic and payload.
func skippableFrame(magic uint32, payload string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// zLog is a zstd log as a writer makes it: the header alone in the first
// frame, then the frames of each flush.
type zLog struct {
	data []byte
	offs []int64 // where each flush starts; offs[0] = 0, the header frame
}

func buildZLog(c *eventlog.ZstdCodec, hdr string, flushes ...string) zLog {
	var l zLog
	for _, f := range append([]string{hdr}, flushes...) {
		l.offs = append(l.offs, int64(len(l.data)))
		l.data, _ = c.AppendFrames(l.data, []byte(f))
	}
	return l
}

// end returns the offset just past flush i.
func (l zLog) end(i int) int64 {
	if i+1 < len(l.offs) {
		return l.offs[i+1]
	}
	return int64(len(l.data))
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

// flip returns a copy of data with the byte at i inverted.
func flip(data []byte, i int64) []byte {
	out := bytes.Clone(data)
	out[i] ^= 0xFF
	return out
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

func readZBytes(t testing.TB, c *eventlog.ZstdCodec, data []byte, opts ...eventlog.ReaderOption) result {
	t.Helper()
	return readZ(t, c, bytes.NewReader(data), opts...)
}

func TestZstdRoundTrip(t *testing.T) {
	c := zCodec(t)
	tests := []struct {
		name    string
		hdr     string
		flushes []string
		want    []eventlog.Event
	}{
		{"header only", hdrLine, nil, nil},
		{"one flush", hdrLine, []string{rows(0, 3)}, rowsEvents(0, 3)},
		{"several flushes", hdrLine, []string{rows(0, 1), rows(1, 4), packedRow(5, 3), rows(8, 1) + packedRow(9, 2) + rows(11, 2)},
			concat(rowsEvents(0, 5), packedEvents(5, 3), rowsEvents(8, 1), packedEvents(9, 2), rowsEvents(11, 2))},
		{"fork", forkHeader(t, eventlog.ModeFork, 41), []string{rows(42, 2), rows(44, 1)}, rowsEvents(42, 3)},
		{"child", forkHeader(t, eventlog.ModeChild, 41), []string{rows(0, 2)}, rowsEvents(0, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := buildZLog(c, tt.hdr, tt.flushes...)
			frames, _ := zstdframe.Frames(bytes.NewReader(l.data), int64(len(l.data)))
			require.Len(t, frames, len(tt.flushes)+1, "one frame per flush, the header in its own")
			for _, ch := range chunkings {
				t.Run(ch.name, func(t *testing.T) {
					res := readZ(t, c, ch.src(string(l.data)))
					requireClean(t, res, len(l.data), tt.want)
				})
			}
			r := eventlog.NewZstdReader(bytes.NewReader(l.data), c)
			hdr, err := r.Header()
			require.NoError(t, err)
			first := hdr.FirstSeq()
			for r.Next() {
			}
			require.NoError(t, r.Err())
			require.Equal(t, first+int64(len(tt.want)), r.NextSeq())
			off, seq := r.Resume()
			require.Equal(t, int64(len(l.data)), off)
			require.Equal(t, first+int64(len(tt.want)), seq)
			last := len(l.offs) - 1
			lo, ln := r.LastFrame()
			require.Equal(t, l.offs[last], lo, "LastFrame offset")
			require.Equal(t, l.end(last)-l.offs[last], ln, "LastFrame length")

			// A Reader started at any flush boundary reads the rest.
			for i := 1; i < len(l.offs); i++ {
				prefix := readZBytes(t, c, l.data[:l.offs[i]])
				requireClean(t, prefix, int(l.offs[i]), tt.want[:len(prefix.events)])
				rest := readZ(t, c, bytes.NewReader(l.data[l.offs[i]:]), eventlog.WithStart(l.offs[i], prefix.next))
				requireClean(t, rest, len(l.data), tt.want[len(prefix.events):])
			}
		})
	}
}

// AppendFrames cuts a large flush into frames of at most zstdframe.Target bytes
// of content at row boundaries; a row larger than zstdframe.Target stands alone.
func TestZstdAppendFramesSplitsAtRows(t *testing.T) {
	c := zCodec(t)
	small := func(first int64, minBytes int) string {
		var b strings.Builder
		pad := strings.Repeat("p", 1000)
		for seq := first; b.Len() < minBytes; seq++ {
			b.WriteString(row(seq, "user/message", testTime+seq, `{"pad":"`+pad+strconv.FormatInt(seq, 10)+`"}`))
		}
		return b.String()
	}
	big := string(bigRow(t, 2, zstdframe.Target+1000)) + "\n"
	tests := []struct {
		name string
		rows string
		// check gets the content of every frame.
		check func(t *testing.T, contents []string)
	}{
		{"below the target: one frame", rows(0, 5), func(t *testing.T, cs []string) {
			require.Equal(t, []string{rows(0, 5)}, cs)
		}},
		{"two and a half targets: three frames", small(0, 5*zstdframe.Target/2), func(t *testing.T, cs []string) {
			require.Len(t, cs, 3)
			for _, content := range cs[:2] {
				require.Greater(t, len(content), zstdframe.Target-2000, "frames are filled up to the target")
			}
		}},
		{"a row larger than the target between small rows", rows(0, 2) + big + rows(3, 2), func(t *testing.T, cs []string) {
			require.Equal(t, []string{rows(0, 2), big, rows(3, 2)}, cs)
		}},
		{"a row larger than the target first", big + rows(3, 2), func(t *testing.T, cs []string) {
			require.Equal(t, []string{big, rows(3, 2)}, cs)
		}},
		{"a row larger than the target last", rows(0, 2) + big, func(t *testing.T, cs []string) {
			require.Equal(t, []string{rows(0, 2), big}, cs)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("prefix")
			out, last := c.AppendFrames(bytes.Clone(prefix), []byte(tt.rows))
			require.Equal(t, prefix, out[:len(prefix)], "dst is appended to")
			body := out[len(prefix):]
			frames, end := zstdframe.Frames(bytes.NewReader(body), int64(len(body)))
			require.Equal(t, int64(len(body)), end)
			var contents []string
			for _, f := range frames {
				require.False(t, f.Skippable)
				content, err := zDecoder().DecodeAll(body[f.Offset:f.Offset+f.Len], nil)
				require.NoError(t, err)
				require.True(t, bytes.HasSuffix(content, []byte("\n")), "a frame holds whole rows")
				if len(content) > zstdframe.Target {
					require.Equal(t, 1, bytes.Count(content, []byte("\n")), "only a row alone may exceed the target")
				}
				contents = append(contents, string(content))
			}
			require.Equal(t, tt.rows, strings.Join(contents, ""))
			require.Equal(t, len(prefix)+int(frames[len(frames)-1].Offset), last, "last is where the last frame starts")
			tt.check(t, contents)
		})
	}

	t.Run("no rows: no frame", func(t *testing.T) {
		out, last := c.AppendFrames([]byte("x"), nil)
		require.Equal(t, []byte("x"), out)
		require.Equal(t, 1, last)
	})

	t.Run("read back", func(t *testing.T) {
		l := buildZLog(c, hdrLine, rows(0, 2)+big+rows(3, 2))
		res := readZBytes(t, c, l.data)
		require.NoError(t, res.err)
		require.Len(t, res.events, 5)
		require.Equal(t, int64(5), res.next)
		require.Equal(t, int64(len(l.data)), res.end)
	})
}

// Decompressing a whole zstd log with a plain zstd decoder yields the raw
// log; skippable frames anywhere are passed over by both.
func TestZstdStreamingDecoderYieldsRawLog(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2), packedRow(2, 3))
	mid := zstdframe.AppendTail(nil, int64(len(l.data)), l.offs[2], l.end(2)-l.offs[2], 5)
	data := cat(l.data, mid)
	data, _ = c.AppendFrames(data, []byte(rows(5, 2)))
	data = append(data, skippableFrame(0x184D2A50, "an index")...)
	last := int64(len(data))
	data, _ = c.AppendFrames(data, []byte(rows(7, 1)))
	lastLen := int64(len(data)) - last
	data = append(data, skippableFrame(0x184D2A5F, "")...)
	data = zstdframe.AppendTail(data, int64(len(data)), last, lastLen, 8)

	raw := hdrLine + rows(0, 2) + packedRow(2, 3) + rows(5, 2) + rows(7, 1)
	zr, err := zstd.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	defer zr.Close()
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, raw, string(got))

	want := concat(rowsEvents(0, 2), packedEvents(2, 3), rowsEvents(5, 3))
	requireClean(t, readZBytes(t, c, data), len(data), want)
	requireClean(t, readBytes(t, raw), len(raw), want)
}

func TestZstdTornLastFrameEveryCut(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2), packedRow(2, 3), rows(5, 4))
	lastOff := l.offs[3]
	want := concat(rowsEvents(0, 2), packedEvents(2, 3))
	for k := int64(1); lastOff+k < int64(len(l.data)); k++ {
		res := readZBytes(t, c, l.data[:lastOff+k])
		require.NoError(t, res.err, "cut at %d", k)
		require.Equal(t, &eventlog.TornTail{Offset: lastOff, Bytes: k}, res.torn, "cut at %d", k)
		requireEvents(t, want, res.events)
		require.Equal(t, lastOff, res.end)
		require.Equal(t, int64(5), res.next)
	}
}

func TestZstdTorn(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2), rows(2, 3), rows(5, 4))
	n := int64(len(l.data))
	lastOff := l.offs[3]
	all, before := rowsEvents(0, 9), rowsEvents(0, 5)
	tail := zstdframe.AppendTail(nil, n, lastOff, n-lastOff, 9)
	tests := []struct {
		name string
		data []byte
		want []eventlog.Event
		torn eventlog.TornTail
	}{
		{"last frame fails its checksum", flip(l.data, n-1), before, eventlog.TornTail{Offset: lastOff, Bytes: n - lastOff}},
		{"last frame with a byte flipped in its middle", flip(l.data, (lastOff+n)/2), before, eventlog.TornTail{Offset: lastOff, Bytes: n - lastOff}},
		{"last frame zero-filled", cat(l.data[:lastOff], make([]byte, n-lastOff)), before, eventlog.TornTail{Offset: lastOff, Bytes: n - lastOff}},
		{"one trailing zero byte", cat(l.data, "\x00"), all, eventlog.TornTail{Offset: n, Bytes: 1}},
		{"three trailing zero bytes", cat(l.data, make([]byte, 3)), all, eventlog.TornTail{Offset: n, Bytes: 3}},
		{"trailing zero bytes", cat(l.data, make([]byte, 1000)), all, eventlog.TornTail{Offset: n, Bytes: 1000}},
		{"trailing garbage", cat(l.data, "not a frame\n"), all, eventlog.TornTail{Offset: n, Bytes: 12}},
		{"a lone magic", cat(l.data, []byte{0x28, 0xB5, 0x2F, 0xFD}), all, eventlog.TornTail{Offset: n, Bytes: 4}},
		{"a truncated tail frame", cat(l.data, tail[:20]), all, eventlog.TornTail{Offset: n, Bytes: 20}},
		{"a skippable frame cut in its size", cat(l.data, tail[:6]), all, eventlog.TornTail{Offset: n, Bytes: 6}},
		{"a skippable frame longer than the rest", cat(l.data, skippableFrame(0x184D2A53, strings.Repeat("i", 100))[:50]), all, eventlog.TornTail{Offset: n, Bytes: 50}},
		{"a complete skippable frame, then a torn frame", cat(l.data, tail, zFrame(rows(9, 1))[:10]), all, eventlog.TornTail{Offset: n + zstdframe.TailSize, Bytes: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ch := range chunkings {
				t.Run(ch.name, func(t *testing.T) {
					res := readZ(t, c, ch.src(string(tt.data)))
					require.NoError(t, res.err)
					require.Equal(t, &tt.torn, res.torn)
					requireEvents(t, tt.want, res.events)
					require.Equal(t, tt.torn.Offset, res.end, "End is where a repaired file ends")
					require.Equal(t, int64(len(tt.want)), res.next)
				})
			}
		})
	}

	// Any byte of the last frame flipped: the frame is torn, or, had the
	// flip left a frame that decodes, its checksum guarantees the content.
	t.Run("every byte of the last frame flipped", func(t *testing.T) {
		tornCount := 0
		for i := lastOff; i < n; i++ {
			res := readZBytes(t, c, flip(l.data, i))
			require.NoError(t, res.err, "flip at %d", i)
			if res.torn == nil {
				requireClean(t, res, int(n), all)
				continue
			}
			tornCount++
			require.Equal(t, &eventlog.TornTail{Offset: lastOff, Bytes: n - lastOff}, res.torn, "flip at %d", i)
			requireEvents(t, before, res.events)
		}
		require.Greater(t, tornCount, int(n-lastOff)*9/10)
	})
}

func TestZstdCorrupt(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2), rows(2, 3), rows(5, 4))
	mid, midEnd := l.offs[2], l.end(2)
	head, rest := l.data[:mid], l.data[midEnd:]                   // before and after the middle frame
	tail := zstdframe.AppendTail(nil, midEnd, mid, midEnd-mid, 5) // as if written after the middle frame
	tests := []struct {
		name   string
		data   []byte
		events []eventlog.Event // read before the error
		offset int64
		seq    int64
		reason string
	}{
		{"a middle frame fails its checksum", flip(l.data, midEnd-1), rowsEvents(0, 2), mid, 2, "fails its checksum or decoding"},
		{"a middle frame with a byte flipped in its middle", flip(l.data, (mid+midEnd)/2), rowsEvents(0, 2), mid, 2, "followed by a valid frame at offset"},
		{"a middle frame with its magic broken", flip(l.data, mid), rowsEvents(0, 2), mid, 2, "bytes that are not a zstd frame"},
		{"a middle frame zero-filled", cat(head, make([]byte, midEnd-mid), rest), rowsEvents(0, 2), mid, 2, "bytes that are not a zstd frame"},
		{"zero bytes between frames", cat(head, make([]byte, 16), l.data[mid:]), rowsEvents(0, 2), mid, 2,
			"followed by a valid frame at offset " + strconv.FormatInt(mid+16, 10)},
		{"garbage between frames", cat(head, "garbage\n", l.data[mid:]), rowsEvents(0, 2), mid, 2, "bytes that are not a zstd frame"},
		{"a frame that ends inside a row", cat(head, zFrame(rows(2, 2)+row(4, "x", 1, "")[:10]), rest), rowsEvents(0, 2), mid, 2, "frame ends in the middle of a row"},
		{"the last frame ends inside a row", cat(head, zFrame(rows(2, 2)+row(4, "x", 1, "")[:10])), rowsEvents(0, 2), mid, 2, "frame ends in the middle of a row"},
		{"a bad first row in a frame", cat(head, zFrame("not a row\n"+rows(3, 2)), rest), rowsEvents(0, 2), mid, 2, "in a frame that passed its checksum"},
		{"a bad row inside a frame", cat(head, zFrame(rows(2, 1)+"not a row\n"+rows(4, 1)), rest), rowsEvents(0, 3), mid, 2, "in a frame that passed its checksum"},
		{"a bad last row of the last frame", cat(head, zFrame(rows(2, 1)+`{"seq":3}`+"\n")), rowsEvents(0, 3), mid, 2, "in a frame that passed its checksum"},
		{"a row with NUL bytes in a frame", cat(head, zFrame("\x00\x00\x00\n"+rows(2, 1))), rowsEvents(0, 2), mid, 2, "in a frame that passed its checksum"},
		{"a seq gap at a frame's start", cat(head, zFrame(rows(3, 2)), rest), rowsEvents(0, 2), mid, 2, "seq 3 where 2 was expected"},
		{"a seq gap inside a frame", cat(head, zFrame(rows(2, 1)+rows(4, 1)), rest), rowsEvents(0, 3), mid, 2, "seq 4 where 3 was expected"},
		{"a repeated seq in the last frame", cat(head, zFrame(rows(1, 1))), rowsEvents(0, 2), mid, 2, "seq 1 where 2 was expected"},
		{"a bad frame, garbage, a valid frame", cat(flip(l.data[:midEnd], midEnd-1), "garbage", rest), rowsEvents(0, 2), mid, 2, "fails its checksum or decoding"},
		{"a bad frame followed by a skippable frame, then a valid one", cat(flip(l.data[:midEnd], midEnd-1), skippableFrame(0x184D2A51, "x"), rest), rowsEvents(0, 2), mid, 2, "fails its checksum"},
		// A tail frame is written only after the frames before it were
		// made durable: a bad frame before one is damage, not a torn write.
		{"the last data frame fails its checksum, a tail frame follows", cat(flip(l.data[:midEnd], midEnd-1), tail), rowsEvents(0, 2), mid, 2, "fails its checksum"},
		{"zero bytes before a tail frame", cat(l.data[:mid], make([]byte, midEnd-mid), tail), rowsEvents(0, 2), mid, 2, "bytes that are not a zstd frame"},
		{"a stale tail frame after a bad frame is no proof", cat(flip(l.data[:midEnd], midEnd-1), zstdframe.AppendTail(nil, 7, mid, midEnd-mid, 5), rest), rowsEvents(0, 2), mid, 2, "followed by a valid frame at offset " + strconv.FormatInt(midEnd+zstdframe.TailSize, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ch := range chunkings {
				t.Run(ch.name, func(t *testing.T) {
					res := readZ(t, c, ch.src(string(tt.data)), eventlog.WithPath("s.jsonl.zst"))
					ce := requireCorrupt(t, res.err, tt.offset, tt.seq, tt.reason)
					require.Equal(t, "s.jsonl.zst", ce.Path)
					require.Nil(t, res.torn)
					requireEvents(t, tt.events, res.events)
				})
			}
		})
	}
}

// A frame whose content would exceed zstdframe.MaxContent is refused without
// being decompressed, and is corruption wherever it is: no writer writes
// one and no crash leaves one. (Regression: last, it read as a torn tail,
// which the next writer cut.)
func TestZstdDecompressionBomb(t *testing.T) {
	c := zCodec(t)
	const size = 64 << 20
	require.Greater(t, size, zstdframe.MaxContent)
	zeros := make([]byte, size)
	withSize := zEncoder().EncodeAll(zeros, nil)
	var sb bytes.Buffer // the same content in a frame that does not declare its size
	w, err := zstd.NewWriter(&sb, zstd.WithEncoderCRC(true), zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)
	_, err = w.Write(zeros)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	zeros = nil
	l := buildZLog(c, hdrLine, rows(0, 2))
	off := int64(len(l.data))
	next := zFrame(rows(2, 1))

	for _, b := range []struct {
		name  string
		frame []byte
		alloc uint64 // the most the read may allocate
	}{
		{"content size declared", withSize, 4 << 20},
		// Known only by decoding it: bounded by zstdframe.MaxContent.
		{"content size not declared", sb.Bytes(), 40 << 20},
	} {
		require.Less(t, len(b.frame), 1<<20, "the bomb is small")
		for _, tt := range []struct {
			name string
			data []byte
		}{
			{"followed by a valid frame", cat(l.data, b.frame, next)},
			{"last", cat(l.data, b.frame)},
		} {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				res := readZBytes(t, c, tt.data)
				runtime.ReadMemStats(&after)
				require.Less(t, after.TotalAlloc-before.TotalAlloc, b.alloc, "bytes allocated by the read")
				requireEvents(t, rowsEvents(0, 2), res.events)
				require.Nil(t, res.torn)
				requireCorrupt(t, res.err, off, 2, "exceeds the limit of")
				if tt.name == "last" {
					// Nor does the tail reader pass over it as a torn frame.
					_, err := logfile.ReadZstdTail(bytes.NewReader(tt.data), int64(len(tt.data)), c, "p")
					var ce *eventlog.CorruptError
					require.ErrorAs(t, err, &ce)
					require.Equal(t, off, ce.Offset)
				}
			})
		}
	}
}

func TestZstdHeader(t *testing.T) {
	c := zCodec(t)
	t.Run("the first frame holds the header alone", func(t *testing.T) {
		l := buildZLog(c, hdrLine, rows(0, 2))
		frames, _ := zstdframe.Frames(bytes.NewReader(l.data), int64(len(l.data)))
		content, err := zDecoder().DecodeAll(l.data[:frames[0].Len], nil)
		require.NoError(t, err)
		require.Equal(t, hdrLine, string(content))
		r := eventlog.NewZstdReader(bytes.NewReader(l.data), c)
		h, err := r.Header()
		require.NoError(t, err)
		require.Equal(t, testID, h.ID)
		require.Equal(t, int64(testTime), h.CreatedAt)
	})

	// A log compressed whole by a zstd tool is one frame: header and rows.
	t.Run("header and rows in one frame", func(t *testing.T) {
		data := cat(zFrame(hdrLine+rows(0, 3)), zFrame(rows(3, 2)))
		for _, ch := range chunkings {
			requireClean(t, readZ(t, c, ch.src(string(data))), len(data), rowsEvents(0, 5))
		}
		// No frame has ended after the header: a Reader resumed from
		// there starts at the top and passes over the header row.
		r := eventlog.NewZstdReader(bytes.NewReader(data), c)
		_, err := r.Header()
		require.NoError(t, err)
		off, seq := r.Resume()
		require.Equal(t, [2]int64{0, 0}, [2]int64{off, seq})
		requireClean(t, readZBytes(t, c, data, eventlog.WithStart(off, seq)), len(data), rowsEvents(0, 5))
		requireClean(t, readZBytes(t, c, data, eventlog.WithStart(off, seq), eventlog.WithFrom(4)), len(data), rowsEvents(4, 1))
	})

	l := buildZLog(c, hdrLine, rows(0, 2), rows(2, 1))
	hdrEnd := l.offs[1]
	tests := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"empty", nil, "no complete first frame"},
		{"garbage", []byte(hdrLine), "no complete first frame"},
		{"the first frame fails its checksum", flip(l.data[:hdrEnd], hdrEnd-1), "no complete first frame"},
		{"the first frame fails its checksum, frames follow", flip(l.data, hdrEnd-1), "fails its checksum or decoding"},
		{"zero bytes, then frames", cat(make([]byte, 10), l.data), "bytes that are not a zstd frame"},
		{"the first frame ends inside the header", cat(zFrame(hdrLine[:20]), l.data[hdrEnd:]), "frame ends in the middle of a row"},
		{"a header that is not one", cat(zFrame(`{"format":"other"}`+"\n"), l.data[hdrEnd:]), ""},
		{"a row where the header should be", cat(zFrame(rows(0, 1)), l.data[hdrEnd:]), ""},
	}
	for k := int64(1); k < hdrEnd; k++ {
		tests = append(tests, struct {
			name   string
			data   []byte
			reason string
		}{"first frame cut at " + strconv.FormatInt(k, 10), l.data[:k], "no complete first frame"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := eventlog.NewZstdReader(bytes.NewReader(tt.data), c, eventlog.WithPath("p"))
			_, err := r.Header()
			ce := requireCorrupt(t, err, 0, -1, tt.reason)
			require.Equal(t, "p", ce.Path)
			require.Nil(t, r.Torn(), "a header error is not a torn tail")
			require.False(t, r.Next())
			require.Equal(t, err, r.Err())
			require.Zero(t, r.End())
		})
	}

	t.Run("version 2", func(t *testing.T) {
		v2 := strings.Replace(hdrLine, `"version":1`, `"version":2`, 1)
		data := buildZLog(c, v2, rows(0, 1)).data
		res := readZBytes(t, c, data, eventlog.WithPath("p"))
		var ve *eventlog.VersionError
		require.ErrorAs(t, res.err, &ve)
		require.ErrorIs(t, res.err, eventlog.ErrVersion)
		require.NotErrorIs(t, res.err, eventlog.ErrCorrupt)
		require.Equal(t, int64(2), ve.Found)
		require.Equal(t, "p", ve.Path)
		require.Empty(t, res.events)
		require.Nil(t, res.torn)
	})
}

// An I/O error is an error, never a torn tail (which a writer would cut
// off), wherever the Reader meets it.
func TestZstdReaderIOError(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2), rows(2, 3), rows(5, 1))
	mid, midEnd := l.offs[2], l.end(2)
	skip := skippableFrame(0x184D2A52, strings.Repeat("s", 200<<10))
	withSkip := cat(l.data[:mid], skip, l.data[mid:])
	tests := []struct {
		name   string
		before []byte
		events []eventlog.Event
	}{
		{"in the header frame", l.data[:5], nil},
		{"in a frame", l.data[:mid+5], rowsEvents(0, 2)},
		{"at a frame boundary", l.data[:mid], rowsEvents(0, 2)},
		{"in a skippable frame", withSkip[:int(mid)+100<<10], rowsEvents(0, 2)},
		{"looking past a bad frame", cat(flip(l.data[:midEnd], midEnd-1), l.data[midEnd:midEnd+3]), rowsEvents(0, 2)},
		{"looking past a bad frame, far", cat(flip(l.data[:midEnd], midEnd-1), make([]byte, 300<<10)), rowsEvents(0, 2)},
		{"in trailing bytes", cat(l.data, "\x00\x00"), rowsEvents(0, 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := readZ(t, c, io.MultiReader(bytes.NewReader(tt.before), iotest.ErrReader(errBoom)))
			require.ErrorIs(t, res.err, errBoom)
			require.NotErrorIs(t, res.err, eventlog.ErrCorrupt)
			require.Nil(t, res.torn)
			requireEvents(t, tt.events, res.events)
		})
	}
}

// A reader of a log that has an empty frame (content of zero bytes) ends
// where a repaired log would end.
func TestZstdEmptyFrame(t *testing.T) {
	c := zCodec(t)
	l := buildZLog(c, hdrLine, rows(0, 2))
	empty := zFrame("")
	data := cat(l.data, empty, zFrame(rows(2, 1)), empty)
	requireClean(t, readZBytes(t, c, data), len(data), rowsEvents(0, 3))
	torn := cat(data, zFrame(rows(3, 1))[:7])
	res := readZBytes(t, c, torn)
	require.NoError(t, res.err)
	require.Equal(t, &eventlog.TornTail{Offset: int64(len(data)), Bytes: 7}, res.torn)
	require.Equal(t, int64(len(data)), res.end)
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// AppendFrames given bytes that do not end in '\n' (not whole rows) puts
// them in a frame rather than looping.
func TestZstdAppendFramesPartialRow(t *testing.T) {
	c := zCodec(t)
	in := bytes.Repeat([]byte("x"), zstdframe.Target+10)
	out, _ := c.AppendFrames(nil, in)
	got, err := zDecoder().DecodeAll(out, nil)
	require.NoError(t, err)
	require.Equal(t, in, got)
}

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

func FuzzZstdReader(f *testing.F) {
	c := zCodec(f)
	for _, s := range zstdLogSeeds(f, c) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := eventlog.NewZstdReader(bytes.NewReader(data), c)
		var evs []eventlog.Event
		for r.Next() {
			evs = append(evs, r.Event())
		}
		err, torn, end := r.Err(), r.Torn(), r.End()
		h, _ := r.Header()

		requireOneEnd(t, r, len(data))

		if err == nil || end > 0 {
			next := h.FirstSeq()
			for _, e := range evs {
				require.Equal(t, next, e.Seq)
				require.NoError(t, e.Validate())
				next++
			}
			require.Equal(t, next, r.NextSeq())
		} else {
			require.Empty(t, evs)
		}

		// The same bytes fed a byte at a time end the same way.
		one := readZ(t, c, iotest.OneByteReader(bytes.NewReader(data)))
		require.Equal(t, err, one.err)
		require.Equal(t, torn, one.torn)
		require.Equal(t, end, one.end)
		requireEvents(t, evs, one.events)

		if err != nil {
			return
		}
		// The good prefix is a clean log of the same events, and a plain
		// zstd decoder turns it into a raw log of the same events.
		requireClean(t, readZBytes(t, c, data[:end]), int(end), evs)
		zr, zerr := zstd.NewReader(bytes.NewReader(data[:end]), zstd.WithDecoderMaxMemory(1<<30))
		require.NoError(t, zerr)
		defer zr.Close()
		raw, zerr := io.ReadAll(zr)
		require.NoError(t, zerr)
		requireClean(t, readAll(t, bytes.NewReader(raw)), len(raw), evs)
	})
}
