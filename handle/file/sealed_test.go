package file_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// marker is written into sealed sessions; no file of the store may hold
// it in clear.
const marker = "MARKER-7f3a9c-plaintext"

func newIdentity(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	require.NoError(t, err)
	return id
}

// sealedStore returns a store on fsys that seals new sessions for id and
// reads them with it.
func sealedStore(fsys afero.Fs, id *age.X25519Identity, opts ...handle.Option) *file.Store {
	return file.New(fsys, "/s", append([]handle.Option{handle.WithRecipients(id.Recipient()), handle.WithIdentities(id)}, opts...)...)
}

// markerEvents returns n events, from seq from on, whose data hold the
// marker.
func markerEvents(n int, from ...int64) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		if len(from) > 0 {
			evs[i].Seq = from[0] + int64(i)
		} else {
			evs[i].Seq = int64(i)
		}
		typ := "tool/result"
		if i%3 == 1 {
			typ = "assistant/chunk"
		}
		evs[i].Type, evs[i].Time, evs[i].Data = typ, int64(1000+i), json.RawMessage(fmt.Sprintf(`{"text":"%s %d"}`, marker, i))
	}
	return evs
}

// requireNoMarker fails when a file under the store's folder holds the
// marker in clear.
func requireNoMarker(t *testing.T, fsys afero.Fs, dir string) {
	t.Helper()
	n := 0
	err := afero.Walk(fsys, dir, func(path string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := afero.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		n++
		require.NotContains(t, string(b), marker, "%s holds the marker in clear", path)
		require.NotContains(t, string(b), "labelvalue-secret", "%s holds a label in clear", path)
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, n)
}

func readEvents(t *testing.T, h handle.Handle) []eventlog.Event {
	t.Helper()
	return ztReadHandle(t, h)
}

// A sealed session, raw and zstd: what is appended reads back through
// the writer, a reopened reader and a writer that appends more, with the
// identity; Stat describes it and its labels; no file of the store holds
// the content or the labels in clear; a store without the identity
// cannot open, stat or read it, and says what is missing.
func TestSealedSession(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			id := newIdentity(t)
			st := sealedStore(fsys, id, handle.WithEncoding(enc))
			w, err := st.Create(ctx, handle.WithLabels(map[string]string{"title": "labelvalue-secret"}))
			require.NoError(t, err)
			evs := markerEvents(30)
			for i := 0; i < len(evs); i += 7 {
				_, err := w.Append(ctx, evs[i:min(i+7, len(evs))]...)
				require.NoError(t, err)
				require.NoError(t, w.Flush(ctx))
			}
			require.Equal(t, canonLines(evs), canonLines(readEvents(t, w)))
			dig, _, err := w.LogDigest(ctx)
			require.NoError(t, err)
			cp, _ := json.Marshal(map[string]string{"log": dig})
			_, err = w.Append(ctx, eventlog.Event{Type: eventlog.TypeCheckpoint, Time: 5000, Data: cp})
			require.NoError(t, err)
			require.NoError(t, w.Close())
			sid := w.ID()

			raw, err := afero.ReadFile(fsys, w.Path())
			require.NoError(t, err)
			layout, sealed := seal.IsSealed(raw)
			require.True(t, sealed)
			require.Equal(t, enc == handle.EncodingZstd, layout == seal.Zstd)

			// A new store (another process) with the identity.
			st2 := sealedStore(fsys, id)
			info, err := st2.Stat(ctx, sid)
			require.NoError(t, err)
			require.True(t, info.Sealed)
			require.Equal(t, int64(len(evs)), info.LastSeq)
			require.Equal(t, "labelvalue-secret", info.Header.Labels["title"])
			r, err := st2.Open(ctx, sid, handle.ReadOnly)
			require.NoError(t, err)
			got := readEvents(t, r)
			require.Equal(t, canonLines(evs), canonLines(got[:len(evs)]))
			require.NoError(t, r.Close())

			w, err = st2.Open(ctx, sid, handle.ReadWrite)
			require.NoError(t, err)
			more := markerEvents(5, int64(len(evs)+1))
			_, err = w.Append(ctx, more...)
			require.NoError(t, err)
			require.NoError(t, w.Close())
			r, err = file.New(fsys, "/s", handle.WithIdentities(id)).Open(ctx, sid, handle.ReadOnly)
			require.NoError(t, err)
			got = readEvents(t, r)
			require.Len(t, got, len(evs)+1+len(more))
			require.Equal(t, canonLines(more), canonLines(got[len(evs)+1:]))
			require.NoError(t, r.Close())

			requireNoMarker(t, fsys, "/s")

			// Without the identity.
			none := file.New(fsys, "/s")
			other := file.New(fsys, "/s", handle.WithIdentities(newIdentity(t)))
			for name, s := range map[string]*file.Store{"no identity": none, "another identity": other} {
				_, err := s.Open(ctx, sid, handle.ReadOnly)
				require.ErrorIs(t, err, seal.ErrNoKey, name)
				var ke *seal.KeyError
				require.ErrorAs(t, err, &ke, name)
				require.Contains(t, err.Error(), sid)
				_, err = s.Stat(ctx, sid)
				require.ErrorIs(t, err, seal.ErrNoKey, name)
				_, err = s.Open(ctx, sid, handle.ReadWrite)
				require.ErrorIs(t, err, seal.ErrNoKey, name)
			}
			require.Contains(t, errString(none.Open(ctx, sid, handle.ReadOnly)), "no identity was given")
			require.Contains(t, errString(other.Open(ctx, sid, handle.ReadOnly)), "none of the 1 identities")
		})
	}
}

func errString(_ handle.Handle, err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The process that creates a sealed session writes and reads it without
// an identity (it made the data key); another process cannot.
func TestSealedWithoutIdentityByItsCreator(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	id := newIdentity(t)
	st := file.New(fsys, "/s", handle.WithRecipients(id.Recipient()))
	w, err := st.Create(ctx)
	require.NoError(t, err)
	_, err = w.Append(ctx, markerEvents(3)...)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := st.Open(ctx, w.ID(), handle.ReadOnly)
	require.NoError(t, err)
	require.Len(t, readEvents(t, r), 3)
	require.NoError(t, r.Close())
	_, err = file.New(fsys, "/s").Open(ctx, w.ID(), handle.ReadOnly)
	require.ErrorIs(t, err, seal.ErrNoKey)
}

// WithRecipients on one create seals that session of a clear store; the
// others stay clear.
func TestSealedFor(t *testing.T) {
	ctx := context.Background()
	fsys := afero.NewMemMapFs()
	id := newIdentity(t)
	st := file.New(fsys, "/s", handle.WithIdentities(id))
	clear, err := st.Create(ctx)
	require.NoError(t, err)
	sealed, err := st.Create(ctx, handle.WithRecipients(id.Recipient()))
	require.NoError(t, err)
	for _, h := range []handle.Handle{clear, sealed} {
		_, err := h.Append(ctx, markerEvents(2)...)
		require.NoError(t, err)
		require.NoError(t, h.Close())
	}
	b, err := afero.ReadFile(fsys, clear.Path())
	require.NoError(t, err)
	require.Contains(t, string(b), marker)
	b, err = afero.ReadFile(fsys, sealed.Path())
	require.NoError(t, err)
	require.NotContains(t, string(b), marker)
	_, err = st.Create(ctx, handle.WithRecipients())
	require.Error(t, err)
	infos, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	require.NotEqual(t, infos[0].Sealed, infos[1].Sealed)
}

// appendMarkers appends n marker events to session id of st (opened for
// writing) and closes it; it returns the seq of the last.
func appendMarkers(t *testing.T, st *file.Store, id string, n int) int64 {
	t.Helper()
	h, err := st.Open(t.Context(), id, handle.ReadWrite)
	require.NoError(t, err)
	last, err := h.Append(t.Context(), markerEvents(n)...)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	return last
}

// readableBy reports how many events a store with only ids reads of
// session id, and the error that stopped it.
func readableBy(t *testing.T, fsys afero.Fs, id string, ids ...age.Identity) (int, error) {
	t.Helper()
	r, err := file.New(fsys, "/s", handle.WithIdentities(ids...)).Open(t.Context(), id, handle.ReadOnly)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for _, err := range r.Read(t.Context(), 0, handle.End) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// A recipient added reads the whole log, and what is appended after; a
// rotation gives the rows after it to its recipients only, and a writer
// that cannot open the newest key is refused.
func TestSealedRecipientsAndRotation(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			a, b, c := newIdentity(t), newIdentity(t), newIdentity(t)
			st := file.New(fsys, "/s", handle.WithIdentities(a), handle.WithEncoding(enc))
			h, err := st.Create(ctx, handle.WithRecipients(a.Recipient()))
			require.NoError(t, err)
			id := h.ID()
			require.NoError(t, h.Close())
			appendMarkers(t, st, id, 4)
			_, err = readableBy(t, fsys, id, b)
			require.ErrorIs(t, err, seal.ErrNoKey)

			require.NoError(t, st.AddRecipients(ctx, id, b.Recipient()))
			appendMarkers(t, st, id, 3)
			n, err := readableBy(t, fsys, id, b)
			require.NoError(t, err)
			require.Equal(t, 7, n, "the recipient added reads every row, before and after")

			require.NoError(t, st.RotateKey(ctx, id, c.Recipient()))
			appendMarkers(t, st, id, 2) // this process made the new key
			n, err = readableBy(t, fsys, id, a, c)
			require.NoError(t, err)
			require.Equal(t, 9, n)
			_, err = readableBy(t, fsys, id, a)
			require.ErrorIs(t, err, seal.ErrNoKey, "the rows after the rotation are the new recipients'")
			require.Contains(t, err.Error(), "data key 1")
			_, err = readableBy(t, fsys, id, c)
			require.ErrorIs(t, err, seal.ErrNoKey, "the rows before it are not")
			require.Contains(t, err.Error(), "data key 0")

			_, err = file.New(fsys, "/s", handle.WithIdentities(a)).Open(ctx, id, handle.ReadWrite)
			require.ErrorIs(t, err, seal.ErrNoKey, "a writer that cannot open the newest key is refused")
			both := file.New(fsys, "/s", handle.WithIdentities(a, c))
			appendMarkers(t, both, id, 1)
			n, err = readableBy(t, fsys, id, a, c)
			require.NoError(t, err)
			require.Equal(t, 10, n)
			requireNoMarker(t, fsys, "/s")

			clearH, err := st.Create(ctx, handle.Unredacted())
			require.NoError(t, err)
			require.NoError(t, clearH.Close())
			require.ErrorIs(t, st.AddRecipients(ctx, clearH.ID(), b.Recipient()), handle.ErrNotSealed)
		})
	}
}

// Shred leaves a sealed session unreadable with every identity, its
// envelopes destroyed in the file (which keeps its length and framing)
// and its derived data gone; it is refused while forks depend on it,
// unless descendants is true, which shreds them and the session's children.
func TestShred(t *testing.T) {
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		t.Run(enc, func(t *testing.T) {
			ctx := t.Context()
			fsys := afero.NewMemMapFs()
			a := newIdentity(t)
			st := sealedStore(fsys, a, handle.WithEncoding(enc))
			h, err := st.Create(ctx)
			require.NoError(t, err)
			id := h.ID()
			_, err = h.Append(ctx, markerEvents(6)...)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			f, err := st.Fork(ctx, id, 3)
			require.NoError(t, err)
			_, err = f.Append(ctx, markerEvents(2, 4)...)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			child, err := st.Create(ctx, handle.WithParent(eventlog.Parent{ID: id, Seq: 2, Mode: eventlog.ModeChild}))
			require.NoError(t, err)
			require.NoError(t, child.Close())

			_, err = st.Shred(ctx, id, false)
			var de *handle.DependentsError
			require.ErrorAs(t, err, &de)
			require.Equal(t, []string{f.ID()}, de.Dependents)
			n, err := readableBy(t, fsys, id, a)
			require.NoError(t, err, "a refused shred changes nothing")
			require.Equal(t, 6, n)

			before, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			rep, err := st.Shred(ctx, id, true)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{id, f.ID(), child.ID()}, rep.Shredded)
			require.Equal(t, 3, rep.Envelopes)

			after, err := afero.ReadFile(fsys, h.Path())
			require.NoError(t, err)
			require.Len(t, after, len(before), "records keep their length")
			for _, s := range []*file.Store{st, sealedStore(fsys, a)} {
				_, err = s.Open(ctx, id, handle.ReadOnly)
				require.ErrorIs(t, err, seal.ErrNoKey)
				require.Contains(t, err.Error(), "shredded")
				_, err = s.Open(ctx, f.ID(), handle.ReadOnly)
				require.ErrorIs(t, err, seal.ErrNoKey)
			}
			fr, err := seal.Check(strings.NewReader(string(after)), layoutOf(enc), h.Path())
			require.NoError(t, err, "the framing is sound")
			require.Len(t, fr.Envelopes, 1)
			require.True(t, fr.Envelopes[0].Shredded)
			cache, _ := afero.Glob(fsys, filepath.Join("/s", ".cache", id+".*"))
			require.Empty(t, cache, "no derived data is left")
			ids, err := st.List(ctx, handle.SkipBroken(func(string, error) {}))
			require.NoError(t, err)
			require.Empty(t, ids, "a shredded session cannot be described")

			rep, err = st.Shred(ctx, id, true)
			require.NoError(t, err)
			require.Zero(t, rep.Envelopes, "shredding again destroys nothing more")
			clearH, err := file.New(fsys, "/s").Create(ctx)
			require.NoError(t, err)
			require.NoError(t, clearH.Close())
			_, err = st.Shred(ctx, clearH.ID(), false)
			require.ErrorIs(t, err, handle.ErrNotSealed)
		})
	}
}

func layoutOf(enc string) seal.Encoding {
	if enc == handle.EncodingZstd {
		return seal.Zstd
	}
	return seal.Raw
}
