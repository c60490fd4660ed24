package file_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
)

// logFileSeeds returns session files of linN, as written by the store:
// a raw fork of linP with a checkpoint, a zstd root with packed rows, the
// same sealed, and each with a torn tail; each with whether it is zstd.
func logFileSeeds(t testing.TB, l *lineage) (files [][]byte, zstd []bool) {
	t.Helper()
	for _, enc := range crashEncodings {
		st := crashStore(l.fresh())
		opts := append(inLayout(enc), handle.WithID(linN), handle.WithLabels(map[string]string{"agent": "fuzz"}))
		var h handle.Handle
		var err error
		if encodingOf(enc) == handle.EncodingRaw {
			h, err = st.Fork(t.Context(), linP, 7, opts...)
		} else {
			h, err = st.Create(t.Context(), opts...)
		}
		require.NoError(t, err)
		growLog(t, h, "N", 5)
		addCheckpoint(t, h)
		growLog(t, h, "N", 2)
		require.NoError(t, h.Close())
		b, err := afero.ReadFile(st.Fs(), h.Path())
		require.NoError(t, err)
		files = append(files, b, b[:len(b)-5])
		z := encodingOf(enc) == handle.EncodingZstd
		zstd = append(zstd, z, z)
	}
	return files, zstd
}

// Whatever bytes a session's file holds, the store's ways of reading it
// agree, and none panics: Open (which checks the whole log) succeeds
// exactly when CheckPath finds no damage, and then CheckPath, Stat (which
// reads only the tail), OpenPath, List, Tree and a read of every event
// tell the same header, the same last event and the same torn tail; the
// logical log reads from seq 0 with contiguous seqs, or fails only for
// its lineage, and its digest is the one computed from its events.
func FuzzLogFile(f *testing.F) {
	l := newLineage(f, handle.EncodingRaw)
	files, zstd := logFileSeeds(f, l)
	for i := range files {
		f.Add(files[i], zstd[i])
	}
	f.Add(l.files[linP], false)
	f.Add(l.files[linU], true) // a session of another ID: refused by its name
	f.Add([]byte{}, false)
	f.Add([]byte("\n"), true)

	// Every input runs in one store that holds linN's parent alone: a copy
	// of the whole fixture per input, and a List of all its sessions, made
	// it several times slower. What an input leaves (its file, derived
	// files, the acknowledged evidence) goes before the next one.
	fsys := afero.NewMemMapFs()
	require.NoError(f, afero.WriteFile(fsys, l.paths[linP], l.files[linP], 0o600))
	paths := []string{filepath.Join(crashDir, linN+".jsonl"), filepath.Join(crashDir, linN+".jsonl.zst")}
	f.Fuzz(func(t *testing.T, fileb []byte, zstd bool) {
		ctx := t.Context()
		require.NoError(t, fsys.RemoveAll(filepath.Join(crashDir, ".cache")))
		for _, p := range paths {
			if err := fsys.Remove(p); !errors.Is(err, fs.ErrNotExist) {
				require.NoError(t, err, p)
			}
		}
		path := paths[0]
		if zstd {
			path = paths[1]
		}
		require.NoError(t, afero.WriteFile(fsys, path, fileb, 0o600))
		st := crashStore(fsys) // it reads the sealed seeds

		check := st.CheckPath(ctx, path, nil)
		h, err := st.Open(ctx, linN, handle.ReadOnly)
		infos, lerr := st.List(ctx, handle.SkipBroken(func(string, error) {}))
		require.NoError(t, lerr, "List skips a broken session")
		listed := slices.IndexFunc(infos, func(in handle.Info) bool { return in.ID == linN })
		if err != nil {
			require.Error(t, check.Err, "Open failed with %v", err)
			_, err = st.OpenPath(ctx, path)
			require.Error(t, err)
			return
		}
		defer h.Close()
		require.NoError(t, check.Err)
		hdr := h.Header()
		require.Equal(t, hdr, check.Header)
		require.Equal(t, check.Torn, h.Torn())
		var own []eventlog.Event
		for e, err := range h.Read(ctx, hdr.FirstSeq(), handle.End) {
			require.NoError(t, err)
			own = append(own, e)
		}
		require.Equal(t, check.Events, int64(len(own)))
		require.Equal(t, hdr.FirstSeq()+int64(len(own))-1, h.Seq())
		for i, e := range own {
			require.Equal(t, hdr.FirstSeq()+int64(i), e.Seq)
		}

		info, err := st.Stat(ctx, linN)
		require.NoError(t, err)
		require.Equal(t, hdr, info.Header)
		require.Equal(t, h.Seq(), info.LastSeq)
		require.Equal(t, h.Seq()+1, info.Events)
		require.Equal(t, int64(len(fileb)), info.SizeBytes)
		if len(own) > 0 {
			last := own[len(own)-1]
			require.Equal(t, last.Type, info.LastType)
			require.Equal(t, last.Time, info.LastTime)
		} else {
			require.Empty(t, info.LastType)
		}
		require.NotEqual(t, -1, listed, "a session Stat reads is listed")
		require.Equal(t, info, infos[listed])
		pathInfo, err := st.StatPath(ctx, path)
		require.NoError(t, err)
		info.ID = hdr.ID
		require.Equal(t, info, pathInfo)

		byPath, err := st.OpenPath(ctx, path)
		require.NoError(t, err)
		require.Equal(t, hdr, byPath.Header())
		require.Equal(t, h.Seq(), byPath.Seq())
		require.NoError(t, byPath.Close())

		roots, err := st.Tree(ctx)
		require.NoError(t, err)
		node := findNode(roots, linN)
		require.NotNil(t, node, "a session Open reads is in the tree")
		if info.Sealed {
			hdr.Labels = nil // sealed: the tree knows what is in clear
		}
		require.Equal(t, hdr, node.Header)

		var all []eventlog.Event
		for e, err := range h.Read(ctx, 0, handle.End) {
			if err != nil {
				require.ErrorIs(t, err, handle.ErrLineage)
				return
			}
			all = append(all, e)
		}
		for i, e := range all {
			require.Equal(t, int64(i), e.Seq)
		}
		require.Len(t, all, int(h.Seq()+1))
		requireLogDigest(t, h)
	})
}

// findNode returns the node of id in a forest, or nil.
func findNode(nodes []*handle.Node, id string) *handle.Node {
	for _, n := range nodes {
		if n.Header.ID == id {
			return n
		}
		if c := findNode(n.Children, id); c != nil {
			return c
		}
	}
	return nil
}
