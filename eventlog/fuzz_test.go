package eventlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

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

func FuzzDecodeRow(f *testing.F) {
	for _, s := range fuzzRows {
		f.Add([]byte(s))
	}
	for _, c := range corruptRows {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		evs, err := eventlog.DecodeRow(line)
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrCorrupt)
			require.Nil(t, evs)
			return
		}
		require.NotEmpty(t, evs)
		require.LessOrEqual(t, len(line), eventlog.MaxRowSize)
		require.LessOrEqual(t, len(evs), len(line))
		for k, e := range evs {
			require.Equal(t, evs[0].Seq+int64(k), e.Seq)
			require.Equal(t, evs[0].Type, e.Type)
			require.NoError(t, e.Validate(), "a decoded event is a valid event")
			require.NotEqual(t, "null", string(e.Data), "null data is nil")
			// canon(e) decodes to the same event.
			back, err := eventlog.DecodeRow(eventlog.AppendCanon(nil, e))
			require.NoError(t, err)
			require.Equal(t, []eventlog.Event{e}, back)
		}
		// Compacted and written by an Encoder that packs the type, the
		// events come back the same, as one row.
		compact := compactEvents(t, evs)
		out := eventlog.NewEncoder([]string{evs[0].Type}).AppendRows(nil, compact)
		require.Equal(t, 1, bytes.Count(out, []byte{'\n'}))
		back, err := eventlog.DecodeRow(out[:len(out)-1])
		require.NoError(t, err)
		require.Equal(t, compact, back)
	})
}

func compactEvents(t *testing.T, evs []eventlog.Event) []eventlog.Event {
	t.Helper()
	out := make([]eventlog.Event, len(evs))
	for k, e := range evs {
		d, err := eventlog.CompactData(e.Data)
		require.NoError(t, err)
		e.Data = d
		out[k] = e
	}
	return out
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

func FuzzReader(f *testing.F) {
	for _, s := range rawLogSeeds(f) {
		f.Add(s)
	}
	// A tail without a newline, one byte longer than any row: corruption,
	// not a torn tail (docs/format.md §9). Too long for the other targets'
	// seeds, which read it many times; a byte at a time here costs the race
	// detector seconds, so under SESSIONLOG_SWEEPS=full only (by default
	// TestReaderLongLines reads such a tail at a lower limit).
	if sweep.Full() {
		f.Add([]byte(hdrLine + rows(0, 1) + strings.Repeat("x", eventlog.MaxRowSize+1)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := eventlog.NewReader(bytes.NewReader(data))
		var evs []eventlog.Event
		for r.Next() {
			e := r.Event()
			// DataOffset: the source's bytes there are the data.
			if at := r.DataOffset(); e.Data == nil {
				require.Equal(t, int64(-1), at)
			} else {
				require.GreaterOrEqual(t, at, int64(0))
				require.LessOrEqual(t, at+int64(len(e.Data)), int64(len(data)))
				require.Equal(t, string(e.Data), string(data[at:at+int64(len(e.Data))]))
			}
			evs = append(evs, e)
		}
		err, torn, end := r.Err(), r.Torn(), r.End()
		h, _ := r.Header()
		requireOneEnd(t, r, len(data))

		// Contiguous seqs from the header's first seq.
		if end == 0 {
			require.Empty(t, evs)
			return
		}
		next := h.FirstSeq()
		for _, e := range evs {
			require.Equal(t, next, e.Seq)
			require.NoError(t, e.Validate())
			next++
		}
		require.Equal(t, next, r.NextSeq())

		// The same bytes fed a byte at a time end the same way.
		one := readAll(t, iotest.OneByteReader(bytes.NewReader(data)))
		require.Equal(t, err, one.err)
		require.Equal(t, torn, one.torn)
		require.Equal(t, end, one.end)
		requireEvents(t, evs, one.events)

		// The good prefix is a clean log of the same events.
		requireClean(t, readAll(t, bytes.NewReader(data[:end])), int(end), evs)

		// Written anew by an Encoder, the events read back the same.
		hdr, herr := eventlog.EncodeHeader(h)
		require.NoError(t, herr)
		compact := compactEvents(t, evs)
		log := eventlog.NewEncoder(nil).AppendRows(append(hdr, '\n'), compact)
		requireClean(t, readAll(t, bytes.NewReader(log)), len(log), compact)
	})
}

// CompactData agrees with encoding/json on what is valid (plus RFC 8259's
// UTF-8, which encoding/json does not check) and on the compacted bytes.
func FuzzCompactData(f *testing.F) {
	for _, s := range []string{`{ "a" : [ 1 , "b c" ] }`, `"\u0041"`, "7\n", " null", `[1,]`, `{"a":1}x`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	for _, c := range invalidJSON[:len(invalidJSON)-2] {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if data == nil {
			return // nil data is absent data: CompactData keeps it nil
		}
		in := bytes.Clone(data)
		got, err := eventlog.CompactData(data)
		require.Equal(t, in, data, "input unchanged")
		require.Equal(t, json.Valid(data) && utf8.Valid(data), err == nil, "valid per encoding/json and UTF-8")
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			return
		}
		std, err := stdCompact(data)
		require.NoError(t, err)
		require.Equal(t, std, string(got))
		require.NoError(t, eventlog.Event{Type: "x", Data: data}.Validate())
	})
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
