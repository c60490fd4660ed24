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
	"github.com/sessionlog/sessionlog/internal/format/logfile"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
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
