package importertest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// CheckBadRecords fails t unless a bad line leaves no trace in what imp, a
// JSONL format, makes of src: s, the session Parse made of src, when cut
// at a bad line (Partial), is the session of the lines before it; and the
// session made with SkipBad is that of src with each line it skipped left
// blank (the same line numbers, Bytes and Digest apart). A converter that
// keeps state across lines must take back what a line the builder drops
// did to it. blanked, when given, makes the session of src with the lines
// blank instead of imp: a format whose records number themselves (dsh)
// goes on past the gap a skipped record leaves, and its blanked reading
// takes a blank line for such a gap.
func CheckBadRecords(t testing.TB, imp importer.Importer, src []byte, s importer.Session, blanked ...importer.Importer) {
	t.Helper()
	ctx := context.Background()
	if s.Partial != nil {
		cut, err := importer.Parse(ctx, imp, bytes.NewReader(src[:s.Bytes]), s.Source, importer.Config{})
		require.NoError(t, err, "the lines before the bad line %d", s.Partial.Line)
		want := s
		want.Partial = nil
		sameSession(t, want, cut, "a session cut at bad line %d is that of the lines before it", s.Partial.Line)
	}
	skip, err := importer.Parse(ctx, imp, bytes.NewReader(src), s.Source, importer.Config{SkipBad: true})
	require.NoError(t, err, "SkipBad refuses what the default conversion takes")
	lines := bytes.SplitAfter(src, []byte("\n"))
	var skipped []int
	for _, re := range skip.Skipped {
		skipped = append(skipped, re.Line)
		require.LessOrEqual(t, re.Line, len(lines), "skipped line %d", re.Line)
		l := lines[re.Line-1]
		lines[re.Line-1] = l[len(bytes.TrimSuffix(l, []byte("\n"))):]
	}
	ref := imp
	if len(blanked) > 0 {
		ref = blanked[0]
	}
	want, err := importer.Parse(ctx, ref, bytes.NewReader(bytes.Join(lines, nil)), s.Source, importer.Config{})
	require.NoError(t, err, "src with the skipped lines %v blank", skipped)
	require.Nil(t, want.Partial, "src with the skipped lines %v blank", skipped)
	got := skip
	got.Skipped = nil
	for _, s := range []*importer.Session{&got, &want} {
		s.Bytes, s.Digest = 0, ""
		if s.Torn != nil {
			torn := *s.Torn
			torn.Offset = 0
			s.Torn = &torn
		}
	}
	sameSession(t, want, got, "the session made past the bad lines %v is that of src with them blank", skipped)
}

// CheckDroppedLine imports src, whose line is one the builder drops,
// both ways: stopping there (the session cut at that line) and going past
// it (that line skipped, alone); shape checks the events of each, and
// CheckBadRecords that the line left no trace.
func CheckDroppedLine(t *testing.T, imp importer.Importer, src []byte, source string, line int, shape func(*testing.T, []eventlog.Event), blanked ...importer.Importer) {
	t.Helper()
	s, err := importer.Parse(t.Context(), imp, bytes.NewReader(src), source, importer.Config{})
	require.NoError(t, err)
	require.NotNil(t, s.Partial, "stopped at the bad line")
	require.Equal(t, line, s.Partial.Line)
	shape(t, s.Events)
	skip, err := importer.Parse(t.Context(), imp, bytes.NewReader(src), source, importer.Config{SkipBad: true})
	require.NoError(t, err)
	require.Len(t, skip.Skipped, 1, "the bad line skipped, alone")
	require.Equal(t, line, skip.Skipped[0].Line)
	shape(t, skip.Events)
	CheckBadRecords(t, imp, src, s, blanked...)
}

// sameSession fails t unless got is want, its events compared as text.
func sameSession(t testing.TB, want, got importer.Session, msg string, args ...any) {
	t.Helper()
	text := func(s *importer.Session) []string {
		var out []string
		for _, e := range s.Events {
			out = append(out, fmt.Sprintf("%d %s %d %s", e.Seq, e.Type, e.Time, e.Data))
		}
		s.Events = nil
		return out
	}
	require.Equal(t, text(&want), text(&got), append([]any{msg + ": events"}, args...)...)
	require.Equal(t, want, got, append([]any{msg}, args...)...)
}
