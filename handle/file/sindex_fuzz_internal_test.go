package file

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// FuzzParsePost: any bytes as a post mark's line (without its "\n")
// parse or are refused, never panic. What parses has its sum, a folder,
// an activity and an evidence as decimal numbers, keeps the line's bytes,
// and is written back by postLine as it was read: its evidence (the third
// field) is the number written or none, its entry the one decoded.
func FuzzParsePost(f *testing.F) {
	e := &sessEntry{ID: "01M90AJ3TQ0000000000000000", LastSeq: 4, LastType: "x", LastTime: 12, Header: &eventlog.Header{ID: "01M90AJ3TQ0000000000000000"}}
	for _, acked := range []int64{-1, 0, 5} {
		for _, e := range []*sessEntry{e, nil, {ID: e.ID, LastSeq: -1, Live: true}} {
			b, err := postLine(1764450000000000000, ".jsonl 812 1764450000000000000", e, acked)
			require.NoError(f, err)
			f.Add(b[:len(b)-1])
		}
	}
	f.Add(appendLine(nil, "1", "- \tnull\t-3"))
	f.Add(appendLine(nil, "1", "-\tnull\t\t5"))
	f.Add(appendLine(nil, "99999999999999999999", "-\tnull"))
	f.Add(appendLine(nil, "1", "-\t"+activePrefix+"-3,}"))
	f.Add([]byte("1\t-\tnull\t5\t00000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := parsePost(b)
		if !ok {
			return
		}
		ln, lok := parseLine(b)
		require.True(t, lok, "its sum checks")
		require.Equal(t, strconv.FormatInt(p.folder, 10), ln.key)
		require.Equal(t, string(b), string(p.raw))
		require.NotEmpty(t, p.js)
		require.GreaterOrEqual(t, p.acked, int64(-1))
		if p.active >= 0 {
			require.Contains(t, string(p.js), activePrefix+strconv.FormatInt(p.active, 10)+",")
		}
		e, ok := p.entry()
		if !ok {
			return
		}
		again, err := postLine(p.folder, p.ident, e, p.acked)
		require.NoError(t, err)
		q, ok := parsePost(again[:len(again)-1])
		require.True(t, ok, "%q", again)
		require.Equal(t, []any{p.folder, p.ident, p.acked, e == nil}, []any{q.folder, q.ident, q.acked, q.gone()})
		qe, ok := q.entry()
		require.True(t, ok)
		require.Equal(t, e, qe)
	})
}

// FuzzSnapshotAcked: any bytes as a snapshot open or are refused as
// damaged, never panic; the evidence looked up in one that opens is a
// number it holds or none, for any ID, and a fold's reading of the whole
// section (readAcked) agrees with each look-up.
func FuzzSnapshotAcked(f *testing.F) {
	const a, b = "01M90AJ3TQ0000000000000000", "01M90AJ3TQ0000000000000001"
	fsys := afero.NewMemMapFs()
	path := filepath.Join("/s", ".cache", sindexName)
	entries := map[string]*sessEntry{a: {ID: a, LastSeq: 3}, b: {ID: b, LastSeq: 0}}
	require.NoError(f, writeSnapshot(f.Context(), fsys, path, entries, map[string]int64{a: 4, b: 1}, 7, ""))
	full, err := afero.ReadFile(fsys, path)
	require.NoError(f, err)
	f.Add(full)
	require.NoError(f, writeSnapshot(f.Context(), fsys, path, entries, nil, 7, ""))
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
		all := map[string]int64{}
		if readAcked(sn, all) != nil {
			clear(all)
		}
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

// FuzzDelta: any bytes as the snapshot's delta open or are refused (not
// its snapshot's: none; damaged), never panic; a delta that opens reads
// whole or is damaged, and what it says of a session is one answer
// whichever way it is read: its IDs (keys) are its entries', and the
// evidence a look-up finds (deltaAcked) is the one a fold reads
// (readAcked), none for a session it says is gone.
func FuzzDelta(f *testing.F) {
	const a, b, c = "01M90AJ3TQ0000000000000000", "01M90AJ3TQ0000000000000001", "01M90AJ3TQ0000000000000002"
	fsys := afero.NewMemMapFs()
	s := &Store{fs: fsys, dir: "/s"}
	snapPath := filepath.Join("/s", cacheDir, sindexName)
	require.NoError(f, writeSnapshot(f.Context(), fsys, snapPath, map[string]*sessEntry{a: {ID: a, LastSeq: 3}}, map[string]int64{a: 4}, 7, ""))
	sn, err := openSnapshot(fsys, snapPath)
	require.NoError(f, err)
	gen := sn.gen
	sn.close()
	for _, tc := range []struct {
		entries map[string]*sessEntry
		acked   map[string]int64
		base    string
	}{
		{map[string]*sessEntry{a: nil, b: {ID: b, LastSeq: 0}}, map[string]int64{a: 4, b: 1}, gen},
		{map[string]*sessEntry{a: {ID: a, LastSeq: -1}, c: {ID: c, LastSeq: -1, Live: true}}, map[string]int64{a: 0}, gen},
		{map[string]*sessEntry{b: {ID: b}}, nil, "another"},
	} {
		require.NoError(f, writeSnapshot(f.Context(), fsys, s.deltaPath(), tc.entries, tc.acked, 8, tc.base))
		d, err := afero.ReadFile(fsys, s.deltaPath())
		require.NoError(f, err)
		f.Add(d)
		f.Add(d[:len(d)*2/3])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := afero.NewMemMapFs()
		s := &Store{fs: fsys, dir: "/s"}
		require.NoError(t, writeSnapshot(t.Context(), fsys, snapPath, map[string]*sessEntry{a: {ID: a, LastSeq: 3}}, map[string]int64{a: 4}, 7, ""))
		sn, err := openSnapshot(fsys, snapPath)
		require.NoError(t, err)
		defer sn.close()
		require.NoError(t, afero.WriteFile(fsys, s.deltaPath(), data, 0o600))
		dl, err := s.openDelta(sn)
		if err != nil || dl == nil {
			return
		}
		defer dl.close()
		require.Equal(t, sn.gen, dl.base())
		entries, _, eerr := dl.entries()
		keys, kerr := dl.keys(secID)
		acked := map[string]int64{}
		aerr := readAcked(dl, acked)
		if eerr != nil || kerr != nil || aerr != nil {
			return
		}
		require.Equal(t, slices.Sorted(maps.Keys(entries)), slices.Sorted(maps.Keys(keys)))
		for _, id := range []string{a, b, c, "", "\xff"} {
			n, said, err := dl.deltaAcked(id)
			if err != nil {
				continue
			}
			e, found := entries[id]
			switch {
			case !found:
				require.False(t, said, id)
			case e == nil:
				require.True(t, said, id)
				require.Equal(t, int64(-1), n, id)
			case said:
				require.Equal(t, max(acked[id], 0), max(n, 0), id)
			}
		}
	})
}

// FuzzMergeSnapshot: any bytes as the old snapshot of a fold that merges
// (writeMerged) are refused as damaged or merged, never panic; a merged
// snapshot opens, each of its sections reads whole in order, and its ID
// section is the old one's lines but the changed sessions', with the
// changed sessions still present, in order.
func FuzzMergeSnapshot(f *testing.F) {
	const a, b, c = "01M90AJ3TQ0000000000000000", "01M90AJ3TQ0000000000000001", "01M90AJ3TQ0000000000000002"
	fsys := afero.NewMemMapFs()
	path := filepath.Join("/s", cacheDir, sindexName)
	hdr := func(id string) *eventlog.Header {
		return &eventlog.Header{ID: id, Labels: map[string]string{"k": "v"}, Parent: &eventlog.Parent{ID: a, Seq: 1, Mode: eventlog.ModeFork}}
	}
	entries := map[string]*sessEntry{a: {ID: a, LastSeq: 3}, b: {ID: b, LastSeq: 0, Header: hdr(b)}, c: {ID: c, LastSeq: -1, Live: true}}
	require.NoError(f, writeSnapshot(f.Context(), fsys, path, entries, map[string]int64{a: 4, b: 1}, 7, ""))
	full, err := afero.ReadFile(fsys, path)
	require.NoError(f, err)
	f.Add(full)
	f.Add(full[:len(full)/2])
	lines := bytes.SplitAfter(full, []byte("\n"))
	lines[1], lines[2] = lines[2], lines[1]
	f.Add(bytes.Join(lines, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := afero.NewMemMapFs()
		require.NoError(t, afero.WriteFile(fsys, path, data, 0o600))
		old, err := openSnapshot(fsys, path)
		if err != nil || old == nil {
			return
		}
		defer old.close()
		changes := map[string]*sessEntry{a: nil, c: {ID: c, LastSeq: 2, Header: hdr(c)}}
		out := filepath.Join("/s", cacheDir, "merged")
		count, err := writeMerged(t.Context(), fsys, out, old, changes, map[string]int64{c: 3}, 9)
		if err != nil {
			require.ErrorIs(t, err, errSindexDamaged)
			return
		}
		m, err := openSnapshot(fsys, out)
		require.NoError(t, err)
		require.NotNil(t, m)
		defer m.close()
		require.Equal(t, count, m.count)
		var want []sline
		for ln, err := range old.lines(secID, old.off[secID]) {
			require.NoError(t, err)
			if _, changed := changes[ln.key]; !changed {
				want = append(want, ln)
			}
		}
		e, err := changes[c].marshal()
		require.NoError(t, err)
		want = append(want, sline{c, string(e)})
		sortLines(want)
		for sec := range nSections {
			var got []sline
			for ln, err := range m.lines(sec, m.off[sec]) {
				require.NoError(t, err)
				if len(got) > 0 {
					require.LessOrEqual(t, got[len(got)-1].key, ln.key)
				}
				got = append(got, ln)
			}
			if sec == secID {
				require.Equal(t, want, got)
				require.Equal(t, int64(len(got)), count)
			}
		}
	})
}
