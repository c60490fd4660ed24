package storeurl_test

import (
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/handle/jetstream"
	"github.com/sessionlog/sessionlog/internal/testkit/natstest"
	"github.com/sessionlog/sessionlog/ops/storeurl"
)

// A folder opens as a file store on the file system given; a session
// created through it is a file in that folder.
func TestOpenFolder(t *testing.T) {
	fs := afero.NewMemMapFs()
	st, closeFn, err := storeurl.Open(t.Context(), "/data/sessions", storeurl.WithFs(fs))
	require.NoError(t, err)
	defer closeFn()
	require.IsType(t, &file.Store{}, st)
	h, err := st.Create(t.Context())
	require.NoError(t, err)
	require.NoError(t, h.Close())
	ok, err := afero.Exists(fs, filepath.Join("/data/sessions", h.ID()+".jsonl"))
	require.NoError(t, err)
	require.True(t, ok)
}

// A nats:// URL opens the JetStream store of its prefix; two prefixes
// are two stores.
func TestOpenNATS(t *testing.T) {
	s := natstest.Run(t)
	open := func(prefix string) handle.Store {
		st, closeFn, err := storeurl.Open(t.Context(), fmt.Sprintf("nats://%s/%s?sync=always&lease=2s", s.Addr(), prefix))
		require.NoError(t, err)
		t.Cleanup(closeFn)
		require.IsType(t, &jetstream.Store{}, st)
		return st
	}
	a, b := open("a"), open("b")
	h, err := a.Create(t.Context())
	require.NoError(t, err)
	require.Equal(t, "nats:a.s."+h.ID(), h.Path())
	require.NoError(t, h.Close())
	_, err = b.Stat(t.Context(), h.ID())
	require.ErrorIs(t, err, handle.ErrNotFound)
	info, err := a.Stat(t.Context(), h.ID())
	require.NoError(t, err)
	require.Equal(t, h.ID(), info.ID)
}

// A URL Open cannot use is refused before anything is dialled, wrapping
// jetstream.ErrURL; a server that does not answer is handle.ErrUnavailable.
// A URL's scheme is read in any case. The message names each layer once
// (regression: "storeurl: jetstream: …").
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct{ url, msg string }{
		{"nats://", "an empty host"},
		{"nats://127.0.0.1:4222/x?lease=soon", `lease="soon": want a duration`},
		{"NATS://127.0.0.1:4222/x?lease=-1s", `lease="-1s": want a duration`},
		{"nats://127.0.0.1:4222/x?sync=never", `sync="never"`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			require.True(t, storeurl.IsURL(tc.url))
			_, _, err := storeurl.Open(t.Context(), tc.url)
			require.ErrorIs(t, err, jetstream.ErrURL)
			require.ErrorContains(t, err, tc.msg)
			require.True(t, strings.HasPrefix(err.Error(), "jetstream: bad store URL "), err.Error())
			require.Equal(t, 1, strings.Count(err.Error(), "jetstream:"), err.Error())
		})
	}
	_, _, err := storeurl.Open(t.Context(), "nats://127.0.0.1:1/x")
	require.ErrorIs(t, err, handle.ErrUnavailable)
	require.Equal(t, 1, strings.Count(err.Error(), "jetstream:"), err.Error())
	require.True(t, strings.HasPrefix(err.Error(), "jetstream: nats://127.0.0.1:1/x: no server answers: "), err.Error())
	require.False(t, storeurl.IsURL("./nats"))
}

// A URL that parses but names a store its server cannot be is refused
// with what is wrong and with which URL, the package named once
// (regression: "jetstream: nats://…/p?replicas=3: jetstream: the replicas
// asked for cannot be placed: …").
func TestOpenRefusesStore(t *testing.T) {
	s := natstest.Run(t)
	u := fmt.Sprintf("nats://%s/p?replicas=3&sync=always", s.Addr())
	_, _, err := storeurl.Open(t.Context(), u)
	require.ErrorIs(t, err, jetstream.ErrReplicas)
	require.True(t, strings.HasPrefix(err.Error(), "jetstream: "+u+": the replicas asked for cannot be placed: stream p with 3 replicas"), err.Error())
	require.Equal(t, 1, strings.Count(err.Error(), "jetstream:"), err.Error())
}

// Existing refuses a folder that is not there, or not a folder, with
// ErrNoStore: a mistyped --dir is an error, not an empty store. Without
// it the folder need not exist (the first Create makes it).
func TestOpenExisting(t *testing.T) {
	fs := afero.NewMemMapFs()
	require.NoError(t, afero.WriteFile(fs, "/file", []byte("x"), 0o600))
	require.NoError(t, fs.MkdirAll("/data", 0o700))
	for _, tc := range []struct{ where, msg string }{
		{"/nowhere", `no store at "/nowhere": no such folder`},
		{"/file", `no store at "/file": not a folder`},
	} {
		_, _, err := storeurl.Open(t.Context(), tc.where, storeurl.WithFs(fs), storeurl.Existing())
		require.ErrorIs(t, err, storeurl.ErrNoStore)
		require.ErrorContains(t, err, tc.msg)
		_, closeFn, err := storeurl.Open(t.Context(), tc.where, storeurl.WithFs(fs))
		require.NoError(t, err, "without Existing")
		closeFn()
	}
	st, closeFn, err := storeurl.Open(t.Context(), "/data", storeurl.WithFs(fs), storeurl.Existing())
	require.NoError(t, err)
	defer closeFn()
	infos, err := st.List(t.Context())
	require.NoError(t, err)
	require.Empty(t, infos)
}

// ReadOnly opens a store that changes nothing, a folder or a URL: its
// sessions read as they are; every write fails (on JetStream wrapping
// handle.ErrReadOnly) and leaves the store as it was; a GC dry run reports.
func TestOpenReadOnly(t *testing.T) {
	s := natstest.Run(t)
	for name, where := range map[string]string{"folder": t.TempDir(), "nats": fmt.Sprintf("nats://%s/ro?sync=always&lease=2s", s.Addr())} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			rw, closeRW, err := storeurl.Open(ctx, where)
			require.NoError(t, err)
			defer closeRW()
			h, err := rw.Create(ctx)
			require.NoError(t, err)
			_, err = h.Append(ctx, eventlog.Event{Type: "x", Time: 1, Data: []byte(`{"k":1}`)})
			require.NoError(t, err)
			require.NoError(t, h.Close())
			id := h.ID()
			before, err := rw.Stat(ctx, id)
			require.NoError(t, err)

			// A stream's view builds no session index: it reads the stream.
			var js natsjs.JetStream
			if st, ok := rw.(*jetstream.Store); ok {
				js = st.JetStream()
				require.NoError(t, js.DeleteKeyValue(ctx, "ro_index"))
			}
			ro, closeRO, err := storeurl.Open(ctx, where, storeurl.ReadOnly())
			require.NoError(t, err)
			defer closeRO()
			listed, err := ro.List(ctx, handle.Page(5, handle.Cursor{}))
			require.NoError(t, err)
			require.Len(t, listed, 1)
			r, err := ro.Open(ctx, id, handle.ReadOnly)
			require.NoError(t, err)
			n := 0
			for _, err := range r.Read(ctx, 0, handle.End) {
				require.NoError(t, err)
				n++
			}
			require.NoError(t, r.Close())
			require.Equal(t, 1, n)
			_, err = ro.GC(ctx, time.Now().Add(time.Hour), true)
			require.NoError(t, err, "a dry run changes nothing")

			one := func(yield func(eventlog.Event, error) bool) {
				yield(eventlog.Event{Seq: 1, Type: "x", Time: 2, Data: []byte(`{}`)}, nil)
			}
			writes := map[string]func() error{
				"open for writing": func() error { _, err := ro.Open(ctx, id, handle.ReadWrite); return err },
				"create":           func() error { _, err := ro.Create(ctx); return err },
				"append all":       func() error { _, err := ro.AppendAll(ctx, id, 1, one); return err },
				"fork":             func() error { _, err := ro.Fork(ctx, id, 0); return err },
				"delete":           func() error { return ro.Delete(ctx, id) },
				"gc":               func() error { _, err := ro.GC(ctx, time.Now().Add(time.Hour), false); return err },
				"put derived":      func() error { return ro.PutDerived(ctx, id, "k", []byte("v")) },
				"rewrite": func() error {
					_, err := ro.Rewrite(ctx, id, func(h handle.Handle) iter.Seq2[eventlog.Event, error] { return h.Read(ctx, 0, handle.End) })
					return err
				},
				"open or create": func() error { _, _, err := ro.OpenOrCreate(ctx, map[string]string{"a": "b"}); return err },
				"open when free": func() error { _, err := ro.OpenWhenFree(ctx, id, 0, nil); return err },
			}
			for what, write := range writes {
				err := write()
				require.Error(t, err, what)
				if storeurl.IsURL(where) {
					require.ErrorIs(t, err, handle.ErrReadOnly, what)
				}
			}
			if js != nil {
				_, err := js.KeyValue(ctx, "ro_index")
				require.ErrorIs(t, err, natsjs.ErrBucketNotFound, "no index built")
			}
			infos, err := rw.List(ctx)
			require.NoError(t, err)
			require.Len(t, infos, 1, "nothing created, nothing deleted")
			after, err := rw.Stat(ctx, id)
			require.NoError(t, err)
			require.Equal(t, before.Events, after.Events)
			_, err = rw.GetDerived(ctx, id, "k")
			require.ErrorIs(t, err, handle.ErrNotFound)

			// What a store tells of sealing only reads: a read-only view
			// still answers it (verify checks a keyless session's framing
			// through it); a stream's view offers none of the capabilities
			// that write.
			if se, ok := rw.(handle.SealedExporter); ok {
				rse, ok := ro.(handle.SealedExporter)
				require.True(t, ok, "the read-only view tells how sessions are sealed")
				fr, err := rse.Framing(ctx, id)
				require.NoError(t, err)
				want, err := se.Framing(ctx, id)
				require.NoError(t, err)
				require.Equal(t, want, fr)
			}
			if storeurl.IsURL(where) { // a folder's store reads through a read-only file system instead
				_, shreds := ro.(handle.Shredder)
				_, rekeys := ro.(handle.Rekeyer)
				require.False(t, shreds || rekeys, "no capability that writes")
			}
		})
	}
}
