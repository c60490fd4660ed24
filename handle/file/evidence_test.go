package file_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/format/zstdframe"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// Regression (docs/format.md, Torn tail or corruption): damage at the end of a log that passes for a torn
// tail, in a session whose writer closed after acknowledging it, was
// reported as a torn tail — verify said ok and the next append cut the
// acknowledged events. In zstd, one bit flipped in the single data frame of
// a 521-event session whose tail frame is missing (a writer killed after
// its last flush leaves none) read as 0 events and a torn tail, and the
// next append started again at seq 0. The store's evidence (what its
// writer recorded on Close) now makes such a tail corruption, which opens,
// verify and repair refuse to cut; a file copied alone, without evidence,
// is judged by its bytes.
func TestTornTailHoldingAcknowledgedSeqsIsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		enc  string
		n    int
		// damage returns the damaged file and the offset and seq the
		// corruption must name.
		damage func(t *testing.T, fileb []byte, lastRow int64) ([]byte, int64, int64)
	}{
		{"raw: the last row's newline flipped", handle.EncodingRaw, 20, func(t *testing.T, fileb []byte, lastRow int64) ([]byte, int64, int64) {
			b := bytes.Clone(fileb)
			b[len(b)-1] ^= 0x01
			return b, lastRow, 19
		}},
		{"zstd: a bit flipped in the only data frame, no tail frame", handle.EncodingZstd, 521, func(t *testing.T, fileb []byte, _ int64) ([]byte, int64, int64) {
			frames, end := zstdframe.Frames(bytes.NewReader(fileb), int64(len(fileb)))
			require.Equal(t, int64(len(fileb)), end)
			require.Len(t, frames, 3, "header frame, data frame, tail frame")
			require.True(t, frames[2].Skippable)
			data := frames[1]
			b := bytes.Clone(fileb[:data.Offset+data.Len]) // the tail frame never written
			b[data.Offset+data.Len/2] ^= 0x10
			return b, data.Offset, 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, crashDir, handle.WithEncoding(tc.enc), func(c *handle.Config) { c.PackTypes = []string{} })
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id, path := h.ID(), h.Path()
			evs := crashEvents(0, tc.n)
			appendAndFlush(t, h, evs...)
			require.NoError(t, h.Close())
			fileb, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			lastRow := int64(bytes.LastIndexByte(fileb[:len(fileb)-1], '\n') + 1)
			damaged, offset, seq := tc.damage(t, fileb, lastRow)
			require.NoError(t, afero.WriteFile(fsys, path, damaged, 0o600))

			requireAckedCorrupt := func(t *testing.T, err error) {
				t.Helper()
				var ce *eventlog.CorruptError
				require.ErrorAs(t, err, &ce)
				require.ErrorIs(t, err, eventlog.ErrCorrupt)
				require.Equal(t, offset, ce.Offset)
				require.Equal(t, seq, ce.Seq)
				require.Contains(t, ce.Reason, "acknowledged")
			}
			for _, mode := range []handle.Mode{handle.ReadWrite, handle.ReadOnly} {
				_, err := st.Open(ctx, id, mode)
				requireAckedCorrupt(t, err)
			}
			_, err = st.OpenPath(ctx, path)
			requireAckedCorrupt(t, err)
			res := st.CheckPath(ctx, path, nil)
			requireAckedCorrupt(t, res.Err)
			require.Nil(t, res.Torn)
			_, err = st.Repair(ctx, id, false)
			requireAckedCorrupt(t, err)
			after, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			require.Equal(t, damaged, after, "nothing is cut")

			// The same bytes copied alone carry no evidence: they read as a
			// torn tail (docs/reliability.md says what stays ambiguous).
			alone := filepath.Join("/elsewhere", filepath.Base(path))
			require.NoError(t, afero.WriteFile(fsys, alone, damaged, 0o600))
			res = file.New(fsys, "/elsewhere").CheckPath(ctx, alone, nil)
			require.NoError(t, res.Err)
			require.Equal(t, &eventlog.TornTail{Offset: offset, Bytes: int64(len(damaged)) - offset}, res.Torn)

			// A salvage cuts at the damage, keeps the bytes in a side file
			// and names the seqs lost.
			rep, err := st.Repair(ctx, id, true)
			require.NoError(t, err)
			require.NotNil(t, rep.Salvaged)
			require.Equal(t, seq, rep.FirstLost)
			w, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			require.Equal(t, canonLines(evs[:seq]), canonLines(readWholeLog(t, w)))
			require.NoError(t, w.Close())
		})
	}
}

// Bytes after every acknowledged event (the remains of a write no Flush
// covered) stay a torn tail with the store's evidence present: it names
// what was acknowledged, and the tail holds none of it.
func TestTornTailAfterAcknowledgedSeqsIsTorn(t *testing.T) {
	for _, enc := range crashEncodings {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			st := file.New(fsys, crashDir, inStore(enc)...)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			evs := crashEvents(0, 8)
			appendAndFlush(t, h, evs...)
			require.NoError(t, h.Close())
			fileb, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			torn := encodeWrite(t, enc, crashEvents(8, 3))
			torn = torn[:len(torn)/2]
			require.NoError(t, afero.WriteFile(fsys, h.Path(), append(bytes.Clone(fileb), torn...), 0o600))
			w, err := st.Open(ctx, h.ID(), handle.ReadWrite)
			require.NoError(t, err)
			require.Equal(t, &eventlog.TornTail{Offset: int64(len(fileb)), Bytes: int64(len(torn))}, w.Torn())
			appendAndFlush(t, w, crashEvents(8, 1)...)
			require.Equal(t, canonLines(crashEvents(0, 9)), canonLines(readWholeLog(t, w)))
			require.NoError(t, w.Close())
		})
	}
}

// FuzzAcknowledgedEvidence: with any bytes as a session's evidence of what
// was acknowledged (the record its writer leaves on Close, or its saved
// digest state), as they are or sealed, an open gives the answer it gives
// without them, except that a sealed record naming a seq inside a torn
// tail turns the tail into corruption at its offset. Evidence never drops
// data, nor fails a log without a torn tail.
func FuzzAcknowledgedEvidence(f *testing.F) {
	ctx := f.Context()
	base := afero.NewMemMapFs()
	st := file.New(base, crashDir)
	type session struct {
		id   string
		torn *eventlog.TornTail
	}
	var sessions []session
	for _, tornBytes := range []int{0, 30} {
		h, err := st.Create(ctx)
		require.NoError(f, err)
		appendAndFlush(f, h, crashEvents(0, 6)...)
		require.NoError(f, h.Close())
		var torn *eventlog.TornTail
		if tornBytes > 0 {
			fileb, err := afero.ReadFile(base, h.Path())
			require.NoError(f, err)
			tail := eventlog.NewEncoder(nil).AppendRows(nil, crashEvents(6, 2))[:tornBytes]
			require.NoError(f, afero.WriteFile(base, h.Path(), append(fileb, tail...), 0o600))
			torn = &eventlog.TornTail{Offset: int64(len(fileb)), Bytes: int64(tornBytes)}
		}
		sessions = append(sessions, session{h.ID(), torn})
	}
	for _, s := range []string{`{"next":6}`, `{"next":7}`, `{"next":99}`, `{"NEXT":99}`, `{"next":-1}`, `{"next":"7"}`, `{"next":7,"last":"x","state":{}}`, "", "null", "[]", `{"next":9223372036854775807}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		for _, key := range []string{"acked", "digest"} {
			for _, sealed := range []bool{false, true} {
				fileb := rec
				if sealed {
					fileb = file.SealDerived(rec)
				}
				fsys := afero.NewCopyOnWriteFs(base, afero.NewMemMapFs())
				st := file.New(fsys, crashDir)
				for _, s := range sessions {
					file.ForgetAcknowledged(st, s.id)
					require.NoError(t, fsys.MkdirAll(filepath.Join(crashDir, ".cache"), 0o700))
					require.NoError(t, afero.WriteFile(fsys, filepath.Join(crashDir, ".cache", s.id+"."+key), fileb, 0o600))
					h, err := st.Open(ctx, s.id, handle.ReadOnly)
					if err != nil {
						require.True(t, sealed, "an unsealed record is no evidence: %v", err)
						require.NotNil(t, s.torn, "evidence fails only a torn tail: %v", err)
						var ce *eventlog.CorruptError
						require.ErrorAs(t, err, &ce)
						require.Equal(t, s.torn.Offset, ce.Offset)
						require.Equal(t, int64(6), ce.Seq)
						continue
					}
					require.Equal(t, s.torn, h.Torn())
					require.Equal(t, canonLines(crashEvents(0, 6)), canonLines(readWholeLog(t, h)))
					require.NoError(t, h.Close())
				}
			}
		}
	})
}

// A reader that opens while a writer's last flush is in progress sees that
// write as a torn tail; if the writer then acknowledges it and closes, the
// evidence it leaves must not make the reader call its own read corrupt.
// The evidence is read after the log, only when the read ends in a torn
// tail: the hook completes the writer's flush and Close when the reader
// looks for it — before it lists the index's marks (the reader finds the
// writer's evidence, ahead of its read, and reads the log again: no torn
// tail), or while it reads a post (it finds the evidence before the
// write: the torn tail stands). Either way it reads every event (a
// reader follows the file). Regression: evidence ahead of the read failed
// the reader with "acknowledged" corruption.
func TestEvidenceAheadOfTheRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(name, id string) bool // the reader's open the hook runs at
		torn bool                       // the reader's open reports a torn tail
	}{
		{"marks listed after the close", func(name, _ string) bool { return name == filepath.Join(crashDir, ".cache", "sessions.d") }, false},
		{"a post read before the close", func(name, id string) bool {
			return strings.HasPrefix(name, filepath.Join(crashDir, ".cache", "sessions.d", id)) && strings.HasSuffix(name, ".post")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			fsys := faultfs.New(afero.NewMemMapFs())
			st := file.New(fsys, crashDir)
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id, path := h.ID(), h.Path()
			appendAndFlush(t, h, crashEvents(0, 3)...)
			require.NoError(t, h.Close())

			w, err := st.Open(ctx, id, handle.ReadWrite)
			require.NoError(t, err)
			_, err = w.Append(ctx, crashEvents(3, 2)...)
			require.NoError(t, err)
			// The first bytes of the write the writer's flush will make.
			inFlight := eventlog.NewEncoder(nil).AppendRows(nil, crashEvents(3, 2))
			fileb, err := afero.ReadFile(fsys, path)
			require.NoError(t, err)
			require.NoError(t, afero.WriteFile(fsys, path, append(fileb, inFlight[:len(inFlight)/2]...), 0o600))

			var fired atomic.Bool
			fsys.SetHook(func(op faultfs.Op, name string) error {
				if op == faultfs.OpOpen && tc.at(name, id) && fired.CompareAndSwap(false, true) {
					require.NoError(t, w.Flush(ctx))
					require.NoError(t, w.Close())
				}
				return nil
			})
			r, err := st.Open(ctx, id, handle.ReadOnly)
			fsys.SetHook(nil)
			require.NoError(t, err)
			require.True(t, fired.Load(), "the reader looked for the evidence")
			require.Equal(t, tc.torn, r.Torn() != nil)
			require.Equal(t, canonLines(crashEvents(0, 5)), canonLines(readWholeLog(t, r)))
			require.NoError(t, r.Close())
		})
	}
}
