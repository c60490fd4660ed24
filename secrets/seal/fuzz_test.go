package seal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// fuzzKey is the data key of the fuzz seeds: fixed, so that a corpus
// entry replays the same way.
var fuzzKey = keyFrom(0, [KeySize]byte{1, 2, 3, 4, 5, 6, 7, 8})

// fuzzSeed seals a small log with fuzzKey.
func fuzzSeed(t testing.TB, enc Encoding, n int) []byte {
	f := newSealed(t, enc, testEvents(n), 2, identity(t).Recipient())
	// Re-seal with the fixed key: header row, then the events.
	data, err := AppendClearHeader(nil, enc, ClearOf(f.hdr))
	require.NoError(t, err)
	f.data, f.records = data, nil
	f.key, f.sealer = fuzzKey, NewSealer(testID, enc, fuzzKey)
	row, err := eventlog.EncodeHeader(f.hdr)
	require.NoError(t, err)
	f.flush(t, append(row, '\n'))
	f.flush(t, eventlog.NewEncoder(nil).AppendRows(nil, testEvents(n)))
	return f.data
}

// fuzzRead reads data with fuzzKey and checks that the read ends in
// exactly one way, and that what it returns holds together.
func fuzzRead(t *testing.T, data []byte, enc Encoding) {
	kr := NewKeyring(testID)
	kr.AddKey(fuzzKey)
	res := readAll(data, enc, kr)
	if res.err != nil {
		require.Nil(t, res.torn, "an error and a torn tail")
		var ce *eventlog.CorruptError
		var ke *KeyError
		var ve *eventlog.VersionError
		if !errors.As(res.err, &ce) && !errors.As(res.err, &ke) && !errors.As(res.err, &ve) {
			require.Contains(t, res.err.Error(), "session") // the keyring of another session
		}
		return
	}
	require.LessOrEqual(t, res.end, int64(len(data)))
	if res.torn != nil {
		require.Equal(t, int64(len(data)), res.torn.Offset+res.torn.Bytes)
		require.Equal(t, res.torn.Offset, res.end)
	}
	for i, e := range res.events {
		require.NoError(t, e.Validate())
		if i > 0 {
			require.Equal(t, res.events[i-1].Seq+1, e.Seq)
		}
	}
}

func FuzzReaderRaw(f *testing.F) {
	f.Add(fuzzSeed(f, Raw, 5))
	f.Add(fuzzSeed(f, Raw, 0))
	f.Add([]byte("{\"format\":\"sessionlog-sealed\",\"version\":1,\"id\":\"" + testID + "\",\"createdAt\":0}\n{\"k\":0,\"s\":\"AAAA\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, Raw) })
}

func FuzzReaderZstd(f *testing.F) {
	f.Add(fuzzSeed(f, Zstd, 5))
	f.Add(fuzzSeed(f, Zstd, 0))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, Zstd) })
}

// FuzzCheck: the framing check never panics, and agrees with a keyed
// read on where a clean file ends.
func FuzzCheck(f *testing.F) {
	for _, enc := range encodings {
		f.Add(fuzzSeed(f, enc, 4), byte(enc))
	}
	f.Fuzz(func(t *testing.T, data []byte, e byte) {
		enc := Raw
		if e%2 == 1 {
			enc = Zstd
		}
		fr, err := Check(bytes.NewReader(data), enc, "f")
		if err != nil {
			return
		}
		require.LessOrEqual(t, fr.End, int64(len(data)))
		if fr.Torn == nil {
			require.Equal(t, int64(len(data)), fr.End)
		}
		for _, env := range fr.Envelopes {
			rec := data[env.Offset : env.Offset+env.Len]
			if repl, err := Shred(enc, rec); err == nil {
				require.Len(t, repl, len(rec))
			}
		}
	})
}

func FuzzClearHeader(f *testing.F) {
	h := eventlog.NewHeader(testID, 1)
	h.Parent = &eventlog.Parent{ID: testID, Seq: 3, Mode: eventlog.ModeFork}
	b, _ := ClearOf(h).encode()
	f.Add(b)
	f.Add([]byte(`{"format":"sessionlog-sealed","version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeClearHeader(b)
		if err != nil {
			return
		}
		again, err := c.encode()
		require.NoError(t, err)
		c2, err := decodeClearHeader(again)
		require.NoError(t, err)
		require.Equal(t, c, c2)
	})
}

// FuzzReadTail: ReadTail never panics, and on a file the Reader reads
// clean it finds the Reader's last event.
func FuzzReadTail(f *testing.F) {
	for _, enc := range encodings {
		f.Add(fuzzSeed(f, enc, 4), byte(enc))
	}
	f.Fuzz(func(t *testing.T, data []byte, e byte) {
		enc := Raw
		if e%2 == 1 {
			enc = Zstd
		}
		kr := NewKeyring(testID)
		kr.AddKey(fuzzKey)
		tail, err := ReadTail(bytes.NewReader(data), int64(len(data)), enc, kr, WithCodec(testCodec))
		res := readAll(data, enc, kr)
		if err != nil || res.err != nil || res.torn != nil {
			return
		}
		require.Equal(t, len(res.events) > 0, tail.Found)
		if tail.Found {
			require.Equal(t, res.events[len(res.events)-1], tail.Last)
		}
	})
}

// FuzzOpenBlob: OpenBlob never panics, and opens only what SealBlob made.
func FuzzOpenBlob(f *testing.F) {
	blob, err := fuzzKey.SealBlob(testID, "p", []byte("derived"))
	require.NoError(f, err)
	f.Add(blob)
	f.Add([]byte("SLBLOB01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, err := fuzzKey.OpenBlob(testID, "p", b)
		if err == nil {
			require.Equal(t, "derived", string(plain))
		}
	})
}

// FuzzReadHead: ReadHead never panics; on a file whose framing is sound
// its envelopes are the first of Check's, and the head ends inside the
// file at a data record.
func FuzzReadHead(f *testing.F) {
	for _, enc := range encodings {
		f.Add(newSealed(f, enc, testEvents(3), 2, identity(f).Recipient(), identity(f).Recipient()).data)
	}
	f.Add([]byte(`{"format":"sessionlog-sealed","version":1,"id":"` + testID + `","createdAt":0}` + "\n"))
	f.Add([]byte(`{"format":"sessionlog","version":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, sealed, err := ReadHead(bytes.NewReader(data), int64(len(data)), "f")
		if err != nil || !sealed {
			return
		}
		require.Less(t, h.End, int64(len(data)))
		fr, err := Check(bytes.NewReader(data), h.Encoding, "f")
		if err != nil {
			return
		}
		require.Equal(t, fr.Header, h.Clear)
		require.LessOrEqual(t, len(h.Envelopes), len(fr.Envelopes))
		for i, e := range h.Envelopes {
			require.Equal(t, fr.Envelopes[i], e)
		}
	})
}

// FuzzReadEnvelope: ReadEnvelope never panics, whatever the bytes and the
// span; what it reads at an envelope Check found is that envelope.
func FuzzReadEnvelope(f *testing.F) {
	for _, enc := range encodings {
		s := newSealed(f, enc, testEvents(1), 1, identity(f).Recipient())
		fr, err := Check(bytes.NewReader(s.data), enc, "f")
		require.NoError(f, err)
		f.Add(s.data, fr.Envelopes[0].Offset, fr.Envelopes[0].Len, byte(enc))
	}
	f.Fuzz(func(t *testing.T, data []byte, off, n int64, e byte) {
		enc := Raw
		if e%2 == 1 {
			enc = Zstd
		}
		if off < 0 || off > int64(len(data)) {
			return
		}
		env, err := ReadEnvelope(bytes.NewReader(data), enc, off, n, "f")
		if err != nil {
			return
		}
		require.Equal(t, off, env.Offset)
		require.Equal(t, n, env.Len)
		require.True(t, env.Shredded || len(env.Age) > 0 || enc == Zstd)
	})
}

// FuzzResume: a Reader started at any point Resume gave during a read
// (with WithStart, past the head) reads the same events as the read from
// the start did after it; NextRecord never panics and moves forward.
func FuzzResume(f *testing.F) {
	for _, enc := range encodings {
		f.Add(fuzzSeed(f, enc, 7), byte(enc))
	}
	f.Fuzz(func(t *testing.T, data []byte, e byte) {
		enc := Raw
		if e%2 == 1 {
			enc = Zstd
		}
		kr := NewKeyring(testID)
		kr.AddKey(fuzzKey)
		r := NewReader(bytes.NewReader(data), enc, kr, WithCodec(testCodec))
		if _, err := r.Header(); err != nil {
			return
		}
		var evs []eventlog.Event
		var points [][2]int64
		for {
			off, seq := r.Resume()
			points = append(points, [2]int64{off, seq})
			if !r.SkipRow() {
				break
			}
		}
		if r.Err() != nil {
			return
		}
		all := readAll(data, enc, kr)
		evs = all.events
		for _, p := range points {
			require.LessOrEqual(t, p[0], int64(len(data)))
			sr := NewReader(bytes.NewReader(data[p[0]:]), enc, kr, WithCodec(testCodec), WithStart(p[0], p[1]))
			var got []eventlog.Event
			for sr.Next() {
				got = append(got, sr.Event())
			}
			require.NoError(t, sr.Err(), "from %v", p)
			var want []eventlog.Event
			for _, ev := range evs {
				if ev.Seq >= p[1] {
					want = append(want, ev)
				}
			}
			require.Equal(t, want, got, "from %v", p)
		}
		for off := int64(0); off < int64(len(data)); off += 1 + off/4 {
			next, ok, err := NextRecord(bytes.NewReader(data), int64(len(data)), off, enc)
			require.NoError(t, err)
			if ok {
				require.Greater(t, next, off)
				require.Less(t, next, int64(len(data)))
			}
		}
	})
}
