package file

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// TestPostLineRoundTrip: a post reads back as written, its last activity
// in clear for a described session, not for a live or gone one, its
// evidence when it says any; an entry without its activity (a post of an
// earlier version) reads with none.
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
		{"created before 1970", &sessEntry{ID: hdr.ID, Header: &eventlog.Header{ID: hdr.ID, CreatedAt: -5}, LastSeq: -1}, -1},
	} {
		for _, acked := range []int64{-1, 0, 7} {
			t.Run(fmt.Sprintf("%s/acked=%d", tc.name, acked), func(t *testing.T) {
				line, err := postLine(1796415459847369964, ".jsonl 592 1796415459847732182", tc.e, acked)
				require.NoError(t, err)
				p, ok := parsePost(line[:len(line)-1])
				require.True(t, ok)
				require.Equal(t, acked, p.acked)
				require.Equal(t, tc.e == nil, p.gone())
				require.Equal(t, int64(1796415459847369964), p.folder)
				require.Equal(t, ".jsonl 592 1796415459847732182", p.ident)
				require.Equal(t, tc.active, p.active)
				require.Equal(t, string(line[:len(line)-1]), string(p.raw))
				e, ok := p.entry()
				require.True(t, ok)
				require.Equal(t, tc.e, e)
			})
		}
	}
	old := appendLine(nil, "7", "- \t"+`{"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","lastSeq":1}`)
	p, ok := parsePost(old[:len(old)-1])
	require.True(t, ok, "a post without its activity")
	require.Equal(t, int64(-1), p.active)
}
