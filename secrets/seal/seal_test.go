package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"filippo.io/age"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

const (
	testID = "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
	marker = "MARKER-7f3a9c"
)

var testCodec = func() *eventlog.ZstdCodec {
	c, err := eventlog.NewZstdCodec(0)
	if err != nil {
		panic(err)
	}
	return c
}()

func testEvents(n int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		typ := "tool/result"
		if i%3 == 1 {
			typ = "assistant/chunk"
		}
		d, _ := json.Marshal(map[string]any{"output": fmt.Sprintf("%s line %d", marker, i)})
		evs[i] = eventlog.Event{Seq: int64(i), Type: typ, Time: int64(1764450000000 + i), Data: d}
	}
	return evs
}

// sealedFile is a sealed log built the way a writer builds one, and what
// it holds.
type sealedFile struct {
	enc    Encoding
	data   []byte
	hdr    eventlog.Header
	events []eventlog.Event
	key    *DataKey
	sealer *Sealer
	// starts of the data records in data, the header row's first.
	records []int64
}

// newSealed seals a header and the events in batches of batch (one flush:
// raw rows or one zstd frame each).
func newSealed(t testing.TB, enc Encoding, events []eventlog.Event, batch int, recipients ...age.Recipient) *sealedFile {
	h := eventlog.NewHeader(testID, 1764450000000)
	h.Labels = map[string]string{"title": marker}
	key, err := NewKey(0)
	require.NoError(t, err)
	envs, err := Wrap(testID, key, recipients...)
	require.NoError(t, err)
	f := &sealedFile{enc: enc, hdr: h, key: key, sealer: NewSealer(testID, enc, key)}
	f.data, err = AppendClearHeader(nil, enc, ClearOf(h))
	require.NoError(t, err)
	for _, e := range envs {
		f.data = AppendKeyRecord(f.data, enc, 0, e)
	}
	row, err := eventlog.EncodeHeader(h)
	require.NoError(t, err)
	f.flush(t, append(row, '\n'))
	enc2 := eventlog.NewEncoder(nil)
	for i := 0; i < len(events); i += batch {
		b := events[i:min(i+batch, len(events))]
		f.flush(t, enc2.AppendRows(nil, b))
		f.events = append(f.events, b...)
	}
	return f
}

// flush seals rows as one writer flush.
func (f *sealedFile) flush(t testing.TB, rows []byte) {
	var err error
	if f.enc == Zstd {
		frame, _ := testCodec.AppendFrames(nil, rows)
		f.records = append(f.records, int64(len(f.data)))
		f.data, err = f.sealer.AppendFrame(f.data, frame)
	} else {
		for _, line := range bytes.SplitAfter(rows, []byte("\n")) {
			if len(line) > 0 {
				f.records = append(f.records, int64(len(f.data)))
				f.data, err = f.sealer.AppendRows(f.data, line)
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, err)
}

type readResult struct {
	hdr    eventlog.Header
	events []eventlog.Event
	err    error
	torn   *eventlog.TornTail
	end    int64
}

func readAll(data []byte, enc Encoding, kr *Keyring) readResult {
	r := NewReader(bytes.NewReader(data), enc, kr, WithPath("s.jsonl"), WithCodec(testCodec))
	var res readResult
	res.hdr, _ = r.Header()
	for r.Next() {
		res.events = append(res.events, r.Event())
	}
	res.err, res.torn, res.end = r.Err(), r.Torn(), r.End()
	return res
}

var encodings = []Encoding{Raw, Zstd}

func identity(t testing.TB) *age.X25519Identity {
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	return id
}

func TestRoundTrip(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			f := newSealed(t, enc, testEvents(50), 7, id.Recipient())
			res := readAll(f.data, enc, NewKeyring(testID, id))
			require.NoError(t, res.err)
			require.Nil(t, res.torn)
			require.Equal(t, f.hdr, res.hdr)
			require.Equal(t, f.events, res.events)
			require.Equal(t, int64(len(f.data)), res.end)
			// Nothing of the content is in clear: not the labels, not the data.
			require.NotContains(t, string(f.data), marker)
			require.NotContains(t, string(f.data), "tool/result")

			fr, err := Check(bytes.NewReader(f.data), enc, "s")
			require.NoError(t, err)
			require.Equal(t, ClearOf(f.hdr), fr.Header)
			require.Equal(t, len(f.records), fr.Records)
			require.Len(t, fr.Envelopes, 1)
			require.Equal(t, int64(len(f.data)), fr.End)
			got, ok := IsSealed(f.data[:120])
			require.True(t, ok)
			require.Equal(t, enc, got)
		})
	}
}

func TestDigestOverPlaintext(t *testing.T) {
	id := identity(t)
	evs := testEvents(20)
	clear := eventlog.NewDigest()
	for _, e := range evs {
		clear.Add(e)
	}
	f := newSealed(t, Raw, evs, 5, id.Recipient())
	sealed := eventlog.NewDigest()
	for _, e := range readAll(f.data, Raw, NewKeyring(testID, id)).events {
		sealed.Add(e)
	}
	require.Equal(t, clear.String(), sealed.String())
}

// TestKeyErrors: without the identity, the error says what is missing.
func TestKeyErrors(t *testing.T) {
	id, other := identity(t), identity(t)
	f := newSealed(t, Raw, testEvents(3), 3, id.Recipient())
	tests := []struct {
		name string
		kr   *Keyring
		want string
	}{
		{"no identity", NewKeyring(testID), "no identity was given"},
		{"another identity", NewKeyring(testID, other), "none of the 1 identities given is a recipient of its 1 envelope(s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := readAll(f.data, Raw, tc.kr)
			var ke *KeyError
			require.ErrorAs(t, res.err, &ke)
			require.ErrorIs(t, res.err, ErrNoKey)
			require.Contains(t, res.err.Error(), tc.want)
			require.Contains(t, res.err.Error(), testID)
			require.Empty(t, res.events)
		})
	}
}

func TestPassphraseAndSeveralRecipients(t *testing.T) {
	a, b := identity(t), identity(t)
	pass, err := age.NewScryptRecipient("correct horse battery staple")
	require.NoError(t, err)
	pass.SetWorkFactor(10)
	f := newSealed(t, Zstd, testEvents(5), 2, a.Recipient(), b.Recipient(), pass)
	fr, err := Check(bytes.NewReader(f.data), Zstd, "s")
	require.NoError(t, err)
	require.Len(t, fr.Envelopes, 2, "the passphrase has an envelope of its own")
	passID, err := age.NewScryptIdentity("correct horse battery staple")
	require.NoError(t, err)
	for _, ids := range [][]age.Identity{{a}, {b}, {passID}} {
		res := readAll(f.data, Zstd, NewKeyring(testID, ids...))
		require.NoError(t, res.err)
		require.Equal(t, f.events, res.events)
	}
}

// TestRecipientAddedLater: an envelope appended after the rows opens
// them once every envelope is read first (Check).
func TestRecipientAddedLater(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			first, later := identity(t), identity(t)
			f := newSealed(t, enc, testEvents(6), 3, first.Recipient())
			envs, err := Wrap(testID, f.key, later.Recipient())
			require.NoError(t, err)
			f.data = AppendKeyRecord(f.data, enc, 0, envs[0])

			res := readAll(f.data, enc, NewKeyring(testID, later))
			require.ErrorIs(t, res.err, ErrNoKey)

			fr, err := Check(bytes.NewReader(f.data), enc, "s")
			require.NoError(t, err)
			kr := NewKeyring(testID, later)
			for _, e := range fr.Envelopes {
				kr.Add(e)
			}
			res = readAll(f.data, enc, kr)
			require.NoError(t, res.err)
			require.Equal(t, f.events, res.events)
		})
	}
}

// TestRotationAndResume: a writer that reopens resumes the count of its
// key; a rotation appends the new key's envelope and seals on with it.
func TestRotationAndResume(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			evs := testEvents(12)
			f := newSealed(t, enc, evs[:6], 3, id.Recipient())
			r := NewReader(bytes.NewReader(f.data), enc, NewKeyring(testID, id), WithCodec(testCodec))
			for r.Next() {
			}
			require.NoError(t, r.Err())
			k, n := r.KeyUse()
			require.Equal(t, uint32(0), k)
			require.Equal(t, uint64(len(f.records)), n)
			require.Equal(t, int64(len(f.data)), r.End())

			f.sealer = ResumeSealer(testID, enc, f.key, n)
			next, err := NewKey(1)
			require.NoError(t, err)
			envs, err := Wrap(testID, next, id.Recipient())
			require.NoError(t, err)
			f.data = AppendKeyRecord(f.data, enc, 1, envs[0])
			f.sealer.Rotate(next)
			f.flush(t, eventlog.NewEncoder(nil).AppendRows(nil, evs[6:]))
			f.events = append(f.events, evs[6:]...)

			res := readAll(f.data, enc, NewKeyring(testID, id))
			require.NoError(t, res.err)
			require.Equal(t, evs, res.events)
		})
	}
}

func TestShred(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			f := newSealed(t, enc, testEvents(4), 2, id.Recipient())
			fr, err := Check(bytes.NewReader(f.data), enc, "s")
			require.NoError(t, err)
			for _, e := range fr.Envelopes {
				rec := f.data[e.Offset : e.Offset+e.Len]
				repl, err := Shred(enc, rec)
				require.NoError(t, err)
				require.Len(t, repl, len(rec))
				copy(rec, repl)
			}
			fr, err = Check(bytes.NewReader(f.data), enc, "s")
			require.NoError(t, err, "a shredded file is still well framed")
			require.True(t, fr.Envelopes[0].Shredded)
			res := readAll(f.data, enc, NewKeyring(testID, id))
			require.ErrorIs(t, res.err, ErrNoKey)
			require.Contains(t, res.err.Error(), "shredded")
		})
	}
}

// TestTornAndCorrupt: docs/format.md §9 on sealed files.
func TestTornAndCorrupt(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			f := newSealed(t, enc, testEvents(9), 3, id.Recipient())
			last := f.records[len(f.records)-1]
			mid := f.records[2]
			kr := func() *Keyring { return NewKeyring(testID, id) }
			// flip changes one bit of the ciphertext of the record at
			// start, keeping its framing (raw: its base64) well formed.
			flip := func(start int64) []byte {
				d := bytes.Clone(f.data)
				if enc == Zstd {
					d[start+8+4+nonceSize] ^= 0x01
					return d
				}
				end := start + int64(bytes.IndexByte(d[start:], '\n'))
				line := d[start:end]
				i := bytes.Index(line, []byte(`"s":"`)) + 5
				raw, err := base64.StdEncoding.DecodeString(string(line[i : len(line)-2]))
				require.NoError(t, err)
				raw[nonceSize] ^= 0x01
				copy(line[i:], base64.StdEncoding.EncodeToString(raw))
				return d
			}
			tests := []struct {
				name    string
				data    []byte
				torn    int64 // offset of the torn tail, or -1
				corrupt int64 // offset of the corruption, or -1
			}{
				{"cut inside the last record", f.data[:len(f.data)-5], last, -1},
				{"the last record fails authentication", flip(last), last, -1},
				{"zero fill after the end", append(bytes.Clone(f.data), make([]byte, 100)...), int64(len(f.data)), -1},
				{"a record in the middle fails authentication", flip(mid), -1, mid},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					res := readAll(tc.data, enc, kr())
					if tc.corrupt >= 0 {
						var ce *eventlog.CorruptError
						require.ErrorAs(t, res.err, &ce)
						require.Equal(t, tc.corrupt, ce.Offset)
						return
					}
					require.NoError(t, res.err)
					require.NotNil(t, res.torn)
					require.Equal(t, tc.torn, res.torn.Offset)
					require.Equal(t, int64(len(tc.data))-tc.torn, res.torn.Bytes)
					require.Equal(t, tc.torn, res.end)
				})
			}
		})
	}
}

// TestBitFlipSweep: every bit of a sealed record counts. A flip in a
// record with records after it is always corruption; in the last one it
// is a torn tail or corruption; never a clean read.
func TestBitFlipSweep(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			f := newSealed(t, enc, testEvents(6), 2, id.Recipient())
			kr := NewKeyring(testID, id)
			check := func(start, end int64, last bool) {
				flips, caught := 0, 0
				for at := start; at < end; at++ {
					for bit := 0; bit < 8; bit++ {
						d := bytes.Clone(f.data)
						d[at] ^= 1 << bit
						res := readAll(d, enc, kr)
						flips++
						switch {
						case res.err != nil:
							caught++
						case res.torn != nil && last:
							caught++
						default:
							t.Errorf("flip of bit %d at offset %d read clean (%d events, torn %v)", bit, at, len(res.events), res.torn)
						}
					}
				}
				require.Equal(t, flips, caught)
			}
			n := len(f.records)
			check(f.records[n-2], f.records[n-1], false) // a record in the middle, its '\n' included
			check(f.records[n-1], int64(len(f.data)), true)
		})
	}
}

func TestClearHeaderMustMatch(t *testing.T) {
	id := identity(t)
	f := newSealed(t, Raw, testEvents(2), 2, id.Recipient())
	// Another createdAt in clear: the sealed header row disagrees.
	d := bytes.Replace(f.data, []byte(`"createdAt":1764450000000`), []byte(`"createdAt":1764450000001`), 1)
	res := readAll(d, Raw, NewKeyring(testID, id))
	var ce *eventlog.CorruptError
	require.ErrorAs(t, res.err, &ce)
	require.Contains(t, ce.Reason, "disagree")
}

func TestCheckTornAndCorrupt(t *testing.T) {
	id := identity(t)
	f := newSealed(t, Raw, testEvents(4), 2, id.Recipient())
	fr, err := Check(bytes.NewReader(f.data[:len(f.data)-3]), Raw, "s")
	require.NoError(t, err)
	require.NotNil(t, fr.Torn)
	require.Equal(t, f.records[len(f.records)-1], fr.Torn.Offset)
	d := bytes.Clone(f.data)
	d[f.records[1]+2] = 'x' // the framing of a record in the middle
	_, err = Check(bytes.NewReader(d), Raw, "s")
	var ce *eventlog.CorruptError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, f.records[1], ce.Offset)
}

func TestReadTail(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc.String(), func(t *testing.T) {
			id := identity(t)
			f := newSealed(t, enc, testEvents(10), 4, id.Recipient())
			last := f.events[len(f.events)-1]
			lastRec := f.records[len(f.records)-1]
			withTail := f.data
			if enc == Zstd {
				withTail = eventlog.AppendTailFrame(bytes.Clone(f.data), int64(len(f.data)), lastRec, int64(len(f.data))-lastRec, last.Seq+1)
			}
			for name, data := range map[string][]byte{
				"whole":           f.data,
				"tail frame":      withTail,
				"torn last flush": f.data[:len(f.data)-3],
			} {
				tail, err := ReadTail(bytes.NewReader(data), int64(len(data)), enc, NewKeyring(testID, id), WithCodec(testCodec))
				require.NoError(t, err, name)
				require.Equal(t, f.hdr, tail.Header, name)
				require.True(t, tail.Found, name)
				want := last
				if name == "torn last flush" {
					want = f.events[len(f.events)-3] // the flush before: events 4..7
					if enc == Raw {
						want = f.events[len(f.events)-2] // raw: rows are records
					}
				}
				require.Equal(t, want, tail.Last, name)
			}
			empty := newSealed(t, enc, nil, 1, id.Recipient())
			tail, err := ReadTail(bytes.NewReader(empty.data), int64(len(empty.data)), enc, NewKeyring(testID, id), WithCodec(testCodec))
			require.NoError(t, err)
			require.False(t, tail.Found)
			_, err = ReadTail(bytes.NewReader(f.data), int64(len(f.data)), enc, NewKeyring(testID), WithCodec(testCodec))
			require.ErrorIs(t, err, ErrNoKey)
		})
	}
}

func TestBlob(t *testing.T) {
	k, err := NewKey(3)
	require.NoError(t, err)
	blob, err := k.SealBlob(testID, "checked", []byte(marker))
	require.NoError(t, err)
	require.NotContains(t, string(blob), marker)
	id, ok := BlobKey(blob)
	require.True(t, ok)
	require.Equal(t, uint32(3), id)
	plain, err := k.OpenBlob(testID, "checked", blob)
	require.NoError(t, err)
	require.Equal(t, marker, string(plain))
	other, err := NewKey(3)
	require.NoError(t, err)
	for name, open := range map[string]func() ([]byte, error){
		"another purpose": func() ([]byte, error) { return k.OpenBlob(testID, "digest", blob) },
		"another session": func() ([]byte, error) { return k.OpenBlob("01JDX2ZJ6M4B2T8V0C3N5Q7R9S", "checked", blob) },
		"another key":     func() ([]byte, error) { return other.OpenBlob(testID, "checked", blob) },
		"a flipped byte": func() ([]byte, error) {
			d := bytes.Clone(blob)
			d[len(d)-1] ^= 1
			return k.OpenBlob(testID, "checked", d)
		},
		"cut short": func() ([]byte, error) { return k.OpenBlob(testID, "checked", blob[:10]) },
	} {
		_, err := open()
		require.ErrorIs(t, err, ErrBlob, name)
	}
}
