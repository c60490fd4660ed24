package file

import (
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// FuzzParsePost: any bytes as a post mark's content parse or are refused,
// never panic; what parses is written back by postLine as it was read, so
// a post's evidence (its third field) is the number written or none.
func FuzzParsePost(f *testing.F) {
	e := &sessEntry{ID: "01M90AJ3TQ0000000000000000", LastSeq: 4, Header: &eventlog.Header{ID: "01M90AJ3TQ0000000000000000"}}
	for _, acked := range []int64{-1, 0, 5} {
		b, err := postLine(1764450000000000000, ".jsonl 812 1764450000000000000", e, acked)
		require.NoError(f, err)
		f.Add(b)
		b, err = postLine(1, "-", nil, acked)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add(appendLine(nil, "1", "- \tnull\t-3"))
	f.Add(appendLine(nil, "1", "-\tnull\t\t5"))
	f.Add([]byte("1\t-\tnull\t5\t00000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := parsePost(b)
		if !ok {
			return
		}
		require.GreaterOrEqual(t, p.acked, int64(-1))
		again, err := postLine(p.folder, p.ident, p.entry, p.acked)
		require.NoError(t, err)
		q, ok := parsePost(again)
		require.True(t, ok, "%q", again)
		require.Equal(t, p, q)
	})
}

// FuzzSnapshotAcked: any bytes as a snapshot open or are refused as
// damaged, never panic; the evidence looked up in one that opens is a
// number it holds or none, for any ID, and a fold's reading of the whole
// section agrees with each look-up.
func FuzzSnapshotAcked(f *testing.F) {
	const a, b = "01M90AJ3TQ0000000000000000", "01M90AJ3TQ0000000000000001"
	fsys := afero.NewMemMapFs()
	path := filepath.Join("/s", ".cache", sindexName)
	entries := map[string]*sessEntry{a: {ID: a, LastSeq: 3}, b: {ID: b, LastSeq: 0}}
	require.NoError(f, writeSnapshot(f.Context(), fsys, path, entries, map[string]int64{a: 4, b: 1}, 7))
	full, err := afero.ReadFile(fsys, path)
	require.NoError(f, err)
	f.Add(full)
	require.NoError(f, writeSnapshot(f.Context(), fsys, path, entries, nil, 7))
	none, err := afero.ReadFile(fsys, path)
	require.NoError(f, err)
	f.Add(none)
	f.Add(full[:len(full)/2])
	f.Add([]byte("sessionlog-sessions 1\tg 7 0 0 0 0 0 0 0\t00000000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := afero.NewMemMapFs()
		require.NoError(t, afero.WriteFile(fsys, path, data, 0o600))
		sn, err := openSnapshot(fsys, path)
		if err != nil || sn == nil {
			return
		}
		defer sn.close()
		s := &Store{fs: fsys, dir: "/s"}
		all := s.foldAcked(sn, path, nil)
		for _, id := range []string{a, b, "", "0", "\xff"} {
			n, ok, err := sn.acked(id)
			if err != nil || !ok {
				continue
			}
			if want, found := all[id]; found {
				require.Equal(t, want, n, id)
			}
		}
	})
}
