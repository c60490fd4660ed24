package file

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// TestPostLineRoundTrip: a post reads back as written, its last activity
// in clear for a described session, not for a live or gone one; an entry
// without it (a post of an earlier version) reads with none.
func TestPostLineRoundTrip(t *testing.T) {
	hdr := &eventlog.Header{ID: "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", CreatedAt: 5, Labels: map[string]string{"k": "v\t<&>"}}
	for _, tc := range []struct {
		name   string
		e      *sessEntry
		active int64
	}{
		{"described", &sessEntry{ID: hdr.ID, Header: hdr, LastSeq: 2, LastType: "t", LastTime: 9}, 9},
		{"created only", &sessEntry{ID: hdr.ID, Header: hdr, LastSeq: -1}, 5},
		{"live", &sessEntry{ID: hdr.ID, Header: hdr, LastSeq: -1, Live: true}, -1},
		{"gone", nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, err := postLine(1796415459847369964, ".jsonl 592 1796415459847732182", tc.e)
			require.NoError(t, err)
			p, ok := parsePost(line[:len(line)-1])
			require.True(t, ok)
			require.Equal(t, int64(1796415459847369964), p.folder)
			require.Equal(t, ".jsonl 592 1796415459847732182", p.ident)
			require.Equal(t, tc.active, p.active)
			require.Equal(t, string(line[:len(line)-1]), string(p.raw))
			e, ok := p.entry()
			require.True(t, ok)
			require.Equal(t, tc.e, e)
		})
	}
	old := appendLine(nil, "7", "- \t"+`{"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","lastSeq":1}`)
	p, ok := parsePost(old[:len(old)-1])
	require.True(t, ok, "a post without its activity")
	require.Equal(t, int64(-1), p.active)
}

// Whatever a post's line holds, parsePost does not panic, and what it
// accepts has its sum, a folder and an activity as decimal numbers, and
// keeps the line's bytes.
func FuzzParsePost(f *testing.F) {
	for _, e := range []*sessEntry{nil, {ID: "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", LastSeq: 3, LastTime: 12, LastType: "x"}} {
		line, err := postLine(99, ".jsonl 1 2", e)
		require.NoError(f, err)
		f.Add(line[:len(line)-1])
	}
	f.Add(appendLine(nil, "99999999999999999999", "-\tnull"))
	f.Add(appendLine(nil, "1", "-\t"+activePrefix+"-3,}"))
	f.Add([]byte("1\t-\tnull\t0000000"))
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
		if p.active >= 0 {
			require.Contains(t, string(p.js), activePrefix+strconv.FormatInt(p.active, 10)+",")
		}
		p.entry() // decodes or not, without panicking
	})
}
