package eventlog_test

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// readAhead reads a zstd log to its end with up to ahead frames decoded
// ahead, whatever their size, or none (0: the decode in line), from src
// (data when nil).
func readAhead(t testing.TB, c *eventlog.ZstdCodec, data []byte, ahead int) result {
	t.Helper()
	return readAheadFrom(t, c, bytes.NewReader(data), ahead)
}

// readAheadFrom is readAhead of the log src yields.
func readAheadFrom(t testing.TB, c *eventlog.ZstdCodec, src io.Reader, ahead int) result {
	t.Helper()
	r := eventlog.NewZstdReader(src, c)
	eventlog.SetMinAhead(r, math.MaxInt)
	if ahead > 0 {
		eventlog.SetMinAhead(r, 1)
		eventlog.SetMaxAhead(r, ahead)
	}
	var res result
	for r.Next() {
		res.events = append(res.events, r.Event())
	}
	res.err, res.torn, res.end, res.next = r.Err(), r.Torn(), r.End(), r.NextSeq()
	return res
}

// requireSameRead asserts that decoding frames ahead, one or several at a
// time, changes nothing a read finds: events, error, torn tail, end and
// next seq.
func requireSameRead(t testing.TB, c *eventlog.ZstdCodec, data []byte) {
	t.Helper()
	inline := readAhead(t, c, data, 0)
	for _, n := range []int{1, 3, 8} {
		ahead := readAhead(t, c, data, n)
		requireEvents(t, inline.events, ahead.events)
		require.Equal(t, inline.err, ahead.err, "%d ahead", n)
		require.Equal(t, inline.torn, ahead.torn, "%d ahead", n)
		require.Equal(t, inline.end, ahead.end, "%d ahead", n)
		require.Equal(t, inline.next, ahead.next, "%d ahead", n)
	}
}

// aheadLog is a zstd log of many frames of a few KiB each (text that
// compresses poorly), so that several are buffered at once and each is
// decoded ahead, with the offsets of its frames.
func aheadLog(t testing.TB, c *eventlog.ZstdCodec) zLog {
	t.Helper()
	return aheadLogOf(t, c, 12)
}

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

// TestZstdAheadSameRead damages a log of frames decoded ahead in every
// frame (a flipped byte at its start, middle and end; a cut there) and
// checks that the read ends exactly as the decode in line ends it.
func TestZstdAheadSameRead(t *testing.T) {
	c := zCodec(t)
	l := aheadLog(t, c)
	n := int64(len(l.data))
	clean := readAhead(t, c, l.data, 4)
	require.NoError(t, clean.err)
	require.Nil(t, clean.torn)
	require.Equal(t, n, clean.end)
	require.Len(t, clean.events, 48)
	requireSameRead(t, c, l.data)
	ends := append(append([]int64(nil), l.offs[1:]...), n)
	for i, off := range l.offs {
		end := ends[i]
		for _, at := range []int64{off, off + 5, (off + end) / 2, end - 1} {
			t.Run("flip "+strconv.FormatInt(at, 10), func(t *testing.T) {
				requireSameRead(t, c, flip(l.data, at))
			})
			t.Run("cut "+strconv.FormatInt(at, 10), func(t *testing.T) {
				requireSameRead(t, c, l.data[:at])
			})
		}
	}
}

// An I/O error met while reading ahead surfaces where the read in order
// meets it: after the same events, with the same error, wherever the
// source fails (inside a frame, at its start, in the bytes read ahead).
func TestZstdAheadIOErrorWhereItWas(t *testing.T) {
	c := zCodec(t)
	l := aheadLog(t, c)
	for i, off := range l.offs {
		for _, at := range []int64{off, off + 3, (off + l.end(i)) / 2} {
			t.Run(strconv.FormatInt(at, 10), func(t *testing.T) {
				src := func() io.Reader { return io.MultiReader(bytes.NewReader(l.data[:at]), iotest.ErrReader(errBoom)) }
				inline := readAheadFrom(t, c, src(), 0)
				require.ErrorIs(t, inline.err, errBoom)
				for _, n := range []int{1, 4} {
					ahead := readAheadFrom(t, c, src(), n)
					requireEvents(t, inline.events, ahead.events)
					require.Equal(t, inline.err, ahead.err)
					require.Nil(t, ahead.torn)
				}
			})
		}
	}
}

// A Reader dropped while a frame is decoded ahead does not keep its codec
// from closing: Close waits for the decode, and the goroutine ends. A read
// that goes on after Close fails with an error that blames no byte of the
// file: neither corruption nor a torn tail.
func TestZstdAheadReaderDroppedThenCodecClosed(t *testing.T) {
	c, err := eventlog.NewZstdCodec(0)
	require.NoError(t, err)
	l := aheadLogOf(t, c, 400) // more frames than are decoded ahead at once
	r := eventlog.NewZstdReader(bytes.NewReader(l.data), c)
	require.True(t, r.Next()) // the first event: the next frames are decoded ahead
	c.Close()
	c.Close() // twice is fine
	for r.Next() {
	}
	require.ErrorContains(t, r.Err(), "codec closed", "a decode after Close fails")
	require.NotErrorIs(t, r.Err(), eventlog.ErrCorrupt)
	require.Nil(t, r.Torn())
}

// FuzzZstdAhead checks that decoding frames ahead changes nothing a read
// finds, on the zstd reader's seeds and on mutations of a log of frames
// that are decoded ahead.
func FuzzZstdAhead(f *testing.F) {
	c := zCodec(f)
	for _, s := range zstdLogSeeds(f, c) {
		f.Add(s)
	}
	l := aheadLog(f, c)
	f.Add(l.data)
	f.Add(flip(l.data, l.offs[3]+7))
	f.Add(l.data[:l.offs[5]+100])
	f.Fuzz(func(t *testing.T, data []byte) {
		requireSameRead(t, c, data) // FuzzZstdReader compares reads a byte at a time
	})
}
