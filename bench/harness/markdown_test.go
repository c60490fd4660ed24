package harness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReplaceSection(t *testing.T) {
	section := func(body string) string { return BeginMarker + "\n\n" + body + "\n" + EndMarker }
	tests := []struct {
		name, doc, body, want string
	}{
		{"replaces only what is between the markers",
			"# P\n\nbefore\n\n" + section("old\ntables") + "\n\nafter\n", "new\n",
			"# P\n\nbefore\n\n" + section("new") + "\n\nafter\n"},
		{"rerunning gives the same file",
			"a\n" + section("x") + "\nb\n", "x", "a\n" + section("x") + "\nb\n"},
		{"appends the section to a file without markers",
			"# P\n\ntext\n\n", "t", "# P\n\ntext\n\n" + section("t") + "\n"},
		{"an empty file gets the section alone", "", "t", section("t") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplaceSection([]byte(tt.doc), []byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestReplaceSectionRefusesBrokenMarkers(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"begin only", "a\n" + BeginMarker + "\nb\n"},
		{"end only", "a\n" + EndMarker + "\n"},
		{"end before begin", EndMarker + "\n" + BeginMarker + "\n"},
		{"two sections", BeginMarker + EndMarker + BeginMarker + EndMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReplaceSection([]byte(tt.doc), []byte("x"))
			require.ErrorIs(t, err, ErrMarkers)
		})
	}
}
