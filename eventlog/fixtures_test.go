package eventlog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

const fixtureDir = "../testdata/raw"

// fixtureOutcome is how reading a fixture ends, as documented in
// testdata/raw/README.md.
type fixtureOutcome struct {
	firstSeq int64 // seq of the first event
	events   int
	end      int64
	torn     *eventlog.TornTail
	corrupt  *eventlog.CorruptError // Offset, Seq and a substring of Reason
	version  int64                  // a *VersionError with this Found, when > 0
}

var fixtureOutcomes = map[string]fixtureOutcome{
	"clean.jsonl":            {events: 5, end: 562},
	"packed.jsonl":           {events: 9, end: 692},
	"fork.jsonl":             {firstSeq: 42, events: 2, end: 324},
	"torn-partial-row.jsonl": {events: 2, end: 282, torn: &eventlog.TornTail{Offset: 282, Bytes: 43}},
	"torn-nul-tail.jsonl":    {events: 2, end: 282, torn: &eventlog.TornTail{Offset: 282, Bytes: 65}},
	"corrupt-nul-hole.jsonl": {events: 2, end: 282, corrupt: &eventlog.CorruptError{
		Offset: 282, Seq: 2, Reason: "row holding NUL bytes followed by a valid row at offset 323"}},
	"corrupt-garbage-row.jsonl": {events: 2, end: 282, corrupt: &eventlog.CorruptError{
		Offset: 282, Seq: 2, Reason: `bad value of "data"`}},
	"corrupt-seq-gap.jsonl": {events: 2, end: 282, corrupt: &eventlog.CorruptError{
		Offset: 282, Seq: 2, Reason: "seq 3 where 2 was expected"}},
	"bad-version.jsonl": {version: 2},
}

func TestFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	readme, err := os.ReadFile(filepath.Join(fixtureDir, "README.md"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			want, ok := fixtureOutcomes[name]
			require.True(t, ok, "fixture %s has no expected outcome in fixtureOutcomes", name)
			require.Contains(t, string(readme), "`"+name+"`", "fixture %s is not described in README.md", name)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			info, err := f.Stat()
			require.NoError(t, err)
			res := readAll(t, f, eventlog.WithPath(path))

			require.Len(t, res.events, want.events)
			for k, e := range res.events {
				require.Equal(t, want.firstSeq+int64(k), e.Seq)
			}
			require.Equal(t, want.end, res.end)
			require.Equal(t, want.torn, res.torn)
			switch {
			case want.corrupt != nil:
				ce := requireCorrupt(t, res.err, want.corrupt.Offset, want.corrupt.Seq, want.corrupt.Reason)
				require.Equal(t, path, ce.Path)
			case want.version > 0:
				var ve *eventlog.VersionError
				require.ErrorAs(t, res.err, &ve)
				require.ErrorIs(t, res.err, eventlog.ErrVersion)
				require.Equal(t, want.version, ve.Found)
				require.Equal(t, path, ve.Path)
			default:
				require.NoError(t, res.err)
			}
			if want.torn == nil && want.corrupt == nil && want.version == 0 {
				require.Equal(t, info.Size(), res.end, "a clean read ends at the end of the file")
				require.Equal(t, want.firstSeq+int64(want.events), res.next)
			}
		})
	}
	for name := range fixtureOutcomes {
		require.True(t, seen[name], "expected outcome for %s, which is not in %s", name, fixtureDir)
	}
}
