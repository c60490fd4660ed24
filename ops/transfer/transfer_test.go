package transfer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/transfer"
)

func ev(i int) eventlog.Event {
	return eventlog.Event{Type: "user/message", Time: int64(1000 + i), Data: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, i))}
}

// session creates a session of n events (a checkpoint among them) in st
// with opts, and returns its ID.
func session(t *testing.T, st handle.Store, n int, opts ...handle.Option) string {
	t.Helper()
	h, err := st.Create(t.Context(), opts...)
	require.NoError(t, err)
	for i := range n {
		_, err := h.Append(t.Context(), ev(i))
		require.NoError(t, err)
		if i == n/2 {
			_, err := checkpoint.Create(t.Context(), h, checkpoint.WithLabel("half"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, h.Close())
	return h.ID()
}

// canon returns the canonical lines of session id's logical log.
func canon(t *testing.T, st handle.Store, id string) string {
	t.Helper()
	h, err := st.Open(t.Context(), id, handle.ReadOnly)
	require.NoError(t, err)
	defer h.Close()
	var b strings.Builder
	for e, err := range h.Read(t.Context(), 0, handle.End) {
		require.NoError(t, err)
		b.Write(eventlog.AppendCanon(nil, e))
		b.WriteByte('\n')
	}
	return b.String()
}

// tree is a store holding a raw parent, a zstd fork of it and a child
// spawned from the fork; it returns their IDs in lineage order.
func tree(t *testing.T, st handle.Store) []string {
	t.Helper()
	parent := session(t, st, 30, handle.WithLabels(map[string]string{"agent": "coder"}))
	f, err := st.Fork(t.Context(), parent, 20, handle.WithEncoding(handle.EncodingZstd))
	require.NoError(t, err)
	for i := range 5 {
		_, err := f.Append(t.Context(), ev(100+i))
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	child := session(t, st, 3, handle.WithParent(eventlog.Parent{ID: f.ID(), Seq: 22, Mode: eventlog.ModeChild, Call: "c1"}))
	return []string{parent, f.ID(), child}
}

func collect(t *testing.T, seq func(func(transfer.Result, error) bool)) ([]transfer.Result, error) {
	t.Helper()
	var out []transfer.Result
	for res, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// Copy keeps what makes a session itself: header, lineage, encoding,
// every event and so every digest; parents come before their forks and
// children; each result says the session's own events and its digest.
func TestCopyFolders(t *testing.T) {
	src := file.New(afero.NewMemMapFs(), "/src")
	ids := tree(t, src)
	dst := file.New(afero.NewMemMapFs(), "/dst")
	res, err := collect(t, transfer.Copy(t.Context(), src, dst))
	require.NoError(t, err)
	require.Len(t, res, 3)
	for i, r := range res {
		require.Equal(t, ids[i], r.ID, "lineage order")
		want, err := src.Stat(t.Context(), r.ID)
		require.NoError(t, err)
		got, err := dst.Stat(t.Context(), r.ID)
		require.NoError(t, err)
		require.Equal(t, want.Header, got.Header)
		require.Equal(t, want.Encoding, got.Encoding)
		require.Equal(t, want.LastSeq, got.LastSeq)
		require.Equal(t, canon(t, src, r.ID), canon(t, dst, r.ID))
		require.True(t, strings.HasPrefix(r.Digest, "sha256:"))
	}
	require.Equal(t, []int64{31, 5, 4}, []int64{res[0].Events, res[1].Events, res[2].Events}, "own events; a fork's inherited ones are its parent's")
	cps, err := func() ([]checkpoint.Info, error) {
		h, err := dst.Open(t.Context(), ids[1], handle.ReadOnly)
		require.NoError(t, err)
		defer h.Close()
		_, err = checkpoint.Verify(t.Context(), h)
		require.NoError(t, err)
		return checkpoint.List(t.Context(), h)
	}()
	require.NoError(t, err)
	require.Len(t, cps, 1, "the fork's inherited checkpoint verifies in the copy")
}

// WithEncoding changes every copy's encoding and nothing of its log; IDs
// copies those sessions only, and refuses one the source lacks.
func TestCopyOptions(t *testing.T) {
	src := file.New(afero.NewMemMapFs(), "/src")
	ids := tree(t, src)
	dst := file.New(afero.NewMemMapFs(), "/dst")
	res, err := collect(t, transfer.Copy(t.Context(), src, dst, transfer.IDs(ids[0]), transfer.WithEncoding(handle.EncodingZstd)))
	require.NoError(t, err)
	require.Len(t, res, 1)
	got, err := dst.Stat(t.Context(), ids[0])
	require.NoError(t, err)
	require.Equal(t, handle.EncodingZstd, got.Encoding)
	require.Equal(t, canon(t, src, ids[0]), canon(t, dst, ids[0]))

	_, err = collect(t, transfer.Copy(t.Context(), src, dst, transfer.IDs(ids[1], "01JDX3N0Q3Z8Y6W2D1V5K7M9PA")))
	require.ErrorIs(t, err, handle.ErrNotFound)
	_, err = dst.Stat(t.Context(), ids[1])
	require.ErrorIs(t, err, handle.ErrNotFound, "nothing copied")
}

// A copy is idempotent: a session the destination holds already with the
// same lineage and log (in any encoding) is unchanged and the copy goes
// on, so a copy stopped part way (a fork whose parent was not copied yet,
// a kill) completes when it is run again, and a third run writes nothing.
func TestCopyGoesOnPastTheSameSession(t *testing.T) {
	src := file.New(afero.NewMemMapFs(), "/src")
	ids := tree(t, src)
	dst := file.New(afero.NewMemMapFs(), "/dst")
	_, err := collect(t, transfer.Copy(t.Context(), src, dst, transfer.IDs(ids[1:2]...)))
	require.ErrorIs(t, err, handle.ErrNotFound, "a fork needs its parent in the destination")
	_, err = collect(t, transfer.Copy(t.Context(), src, dst, transfer.IDs(ids[0]), transfer.WithEncoding(handle.EncodingZstd)))
	require.NoError(t, err)

	res, err := collect(t, transfer.Copy(t.Context(), src, dst))
	require.NoError(t, err)
	require.Equal(t, []transfer.Status{transfer.Unchanged, transfer.Created, transfer.Created}, statuses(res))
	require.Equal(t, []int64{31, 5, 4}, []int64{res[0].Events, res[1].Events, res[2].Events}, "own events, whatever the status")
	before := stats(t, dst, ids)
	again, err := collect(t, transfer.Copy(t.Context(), src, dst))
	require.NoError(t, err)
	require.Equal(t, []transfer.Status{transfer.Unchanged, transfer.Unchanged, transfer.Unchanged}, statuses(again))
	for i := range res {
		require.Equal(t, res[i].Digest, again[i].Digest)
		require.Equal(t, canon(t, src, ids[i]), canon(t, dst, ids[i]))
	}
	require.Equal(t, before, stats(t, dst, ids), "nothing written")
}

// A session the destination holds under the ID copied with another log
// or lineage is a conflict naming both: the copy writes nothing to it and
// stops there, and the sessions after it are not copied.
func TestCopyConflict(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant makes, in dst (which holds ids[0] and ids[1] copied),
		// a session under ids[2] that is not src's.
		plant  func(t *testing.T, dst handle.Store, ids []string)
		reason string
	}{
		{"fewer events", func(t *testing.T, dst handle.Store, ids []string) {
			session(t, dst, 1, handle.WithID(ids[2]), handle.WithParent(eventlog.Parent{ID: ids[1], Seq: 22, Mode: eventlog.ModeChild, Call: "c1"}))
		}, "it holds 2 events, the source 4 events"},
		{"other events", func(t *testing.T, dst handle.Store, ids []string) {
			h, err := dst.Create(t.Context(), handle.WithID(ids[2]), handle.WithParent(eventlog.Parent{ID: ids[1], Seq: 22, Mode: eventlog.ModeChild, Call: "c1"}))
			require.NoError(t, err)
			for i := range 4 {
				_, err := h.Append(t.Context(), ev(50+i))
				require.NoError(t, err)
			}
			require.NoError(t, h.Close())
		}, "its log digest is sha256:"},
		{"other lineage", func(t *testing.T, dst handle.Store, ids []string) {
			session(t, dst, 3, handle.WithID(ids[2])) // the same events, as a root
		}, "its lineage is none (no parent), the source's child of " + "%s at seq 22 (call c1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := file.New(afero.NewMemMapFs(), "/src")
			ids := tree(t, src)
			dst := file.New(afero.NewMemMapFs(), "/dst")
			_, err := collect(t, transfer.Copy(t.Context(), src, dst, transfer.IDs(ids[:2]...)))
			require.NoError(t, err)
			tc.plant(t, dst, ids)
			planted := canon(t, dst, ids[2])
			before := stats(t, dst, ids)

			res, err := collect(t, transfer.Copy(t.Context(), src, dst))
			require.Equal(t, []transfer.Status{transfer.Unchanged, transfer.Unchanged}, statuses(res))
			var ce *transfer.ConflictError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, handle.ErrExists)
			reason := tc.reason
			if strings.Contains(reason, "%s") {
				reason = fmt.Sprintf(reason, ids[1])
			}
			require.Contains(t, ce.Reason, reason)
			require.Equal(t, "/src/"+ids[2]+".jsonl", ce.Source)
			require.Equal(t, "/dst/"+ids[2]+".jsonl", ce.Dest)
			require.Contains(t, err.Error(), "copy "+ids[2]+": ")
			require.Contains(t, err.Error(), ce.Source)
			require.Contains(t, err.Error(), ce.Dest)
			require.Equal(t, planted, canon(t, dst, ids[2]), "the destination's session is left as it was")
			require.Equal(t, before, stats(t, dst, ids))
		})
	}
}

func statuses(res []transfer.Result) []transfer.Status {
	out := make([]transfer.Status, len(res))
	for i, r := range res {
		out[i] = r.Status
	}
	return out
}

// stats describes sessions ids of st (those it holds), to tell whether
// anything was written to them.
func stats(t *testing.T, st handle.Store, ids []string) []handle.Info {
	t.Helper()
	var out []handle.Info
	for _, id := range ids {
		info, err := st.Stat(t.Context(), id)
		if errors.Is(err, handle.ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		out = append(out, info)
	}
	return out
}

// A copy that fails part way (the destination's disk fails its fsync, or
// the rename that publishes it) leaves no session behind, and the same copy
// succeeds once the fault is gone.
func TestCopyFailureLeavesNothing(t *testing.T) {
	src := file.New(afero.NewMemMapFs(), "/src")
	id := session(t, src, 5000)
	for _, op := range []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpRename} {
		t.Run(op.String(), func(t *testing.T) {
			ffs := faultfs.New(afero.NewMemMapFs())
			dst := file.New(ffs, "/dst")
			ffs.SetHook(func(o faultfs.Op, name string) error {
				if o == op && strings.HasPrefix(filepath.Base(name), id) {
					return errors.New("injected: " + op.String() + " failed")
				}
				return nil
			})
			_, err := transfer.Session(t.Context(), src, dst, id)
			require.ErrorContains(t, err, "injected")
			_, err = dst.Stat(t.Context(), id)
			require.ErrorIs(t, err, handle.ErrNotFound, "no partial session")
			ffs.SetHook(nil)
			res, err := transfer.Session(t.Context(), src, dst, id)
			require.NoError(t, err)
			require.Equal(t, int64(5001), res.Events)
			require.Equal(t, canon(t, src, id), canon(t, dst, id))
		})
	}
}

// Folder → JetStream → folder keeps every byte of the logical logs; a
// zstd session goes to JetStream with WithEncoding(raw) only.
func TestCopyJetStream(t *testing.T) {
	js, err := jetstream.New(t.Context(), natstest.Connect(t, natstest.Run(t)), jetstream.WithPrefix("copy"))
	require.NoError(t, err)
	src := file.New(afero.NewMemMapFs(), "/src")
	ids := tree(t, src)

	_, err = collect(t, transfer.Copy(t.Context(), src, js))
	require.ErrorContains(t, err, "raw logs", "the zstd fork")
	res, err := collect(t, transfer.Copy(t.Context(), src, js, transfer.IDs(ids[1:]...), transfer.WithEncoding(handle.EncodingRaw)))
	require.NoError(t, err)
	require.Len(t, res, 2)
	again, err := collect(t, transfer.Copy(t.Context(), src, js, transfer.IDs(ids[1:]...), transfer.WithEncoding(handle.EncodingRaw)))
	require.NoError(t, err)
	require.Equal(t, []transfer.Status{transfer.Unchanged, transfer.Unchanged}, statuses(again), "a copy to JetStream run again writes nothing")

	back := file.New(afero.NewMemMapFs(), "/back")
	res, err = collect(t, transfer.Copy(t.Context(), js, back))
	require.NoError(t, err)
	got := make([]string, len(res))
	for i, r := range res {
		got[i] = r.ID
		require.Equal(t, canon(t, src, r.ID), canon(t, back, r.ID))
	}
	require.Equal(t, ids, got)
	require.True(t, slices.IsSortedFunc(res, func(a, b transfer.Result) int { return strings.Compare(a.ID, b.ID) }))
}

// flipFs is a destination that stores what it is given with one byte
// changed: the first "m3" written to a file becomes "n3", a row that
// still parses but holds another event.
type flipFs struct{ afero.Fs }

func (f flipFs) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (f flipFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	file, err := f.Fs.OpenFile(name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return file, err
	}
	return &flipFile{File: file}, nil
}

type flipFile struct {
	afero.File
	done bool
}

func (f *flipFile) Write(p []byte) (int, error) {
	if i := bytes.Index(p, []byte(`"m3"`)); i >= 0 && !f.done {
		f.done = true
		q := bytes.Clone(p)
		q[i+1] = 'n'
		return f.File.Write(q)
	}
	return f.File.Write(p)
}

// A destination that stores a byte other than the one written fails the
// copy with a *DigestError naming the session, and the copy it made is
// removed: no session is left there that is not the source's.
func TestCopyDigestDiffers(t *testing.T) {
	src := file.New(afero.NewMemMapFs(), "/src")
	id := session(t, src, 10)
	dst := file.New(flipFs{afero.NewMemMapFs()}, "/dst")
	_, err := transfer.Session(t.Context(), src, dst, id)
	var de *transfer.DigestError
	require.ErrorAs(t, err, &de)
	require.Equal(t, id, de.ID)
	require.ErrorContains(t, err, id)
	require.NotEqual(t, de.Want, de.Got)
	_, err = dst.Stat(t.Context(), id)
	require.ErrorIs(t, err, handle.ErrNotFound, "the copy that differs is removed")
	infos, err := dst.List(t.Context())
	require.NoError(t, err)
	require.Empty(t, infos)
}
