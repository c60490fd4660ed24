package dsh_test

import (
	"bytes"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/dsh"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// FuzzParseLog converts arbitrary bytes as a dsh log, faithfully and with the
// vocabulary. testdata/fuzz/FuzzParseLog holds a few more seeds: rows of the
// real sessions, and what the fuzzer found.
func FuzzParseLog(f *testing.F) {
	for _, in := range importertest.DshLogs() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := dsh.ParseLog(bytes.NewReader(in))
		v, verr := dsh.ParseLog(bytes.NewReader(in), dsh.Vocabulary())
		if err != nil {
			importertest.CheckError(t, err, in, dsh.ErrFormat)
			require.EqualError(t, verr, err.Error(), "the vocabulary reads the same rows")
			return
		}
		require.NoError(t, verr)
		again, err := dsh.ParseLog(bytes.NewReader(in))
		require.NoError(t, err)
		require.Equal(t, s, again, "deterministic")

		require.GreaterOrEqual(t, s.CreatedAt, int64(0))
		id, err := ulid.ParseStrict(s.ID)
		require.NoError(t, err)
		require.Equal(t, uint64(s.CreatedAt), id.Time(), "the ID's time is createdAt")
		require.Equal(t, "dsh", s.Labels["source"])
		require.Contains(t, s.Labels, "dsh.id")
		r := s.Report
		require.LessOrEqual(t, r.PackedRows, r.Rows)
		require.LessOrEqual(t, r.Rows-r.PackedRows, len(s.Events), "a plain row is one event")
		require.LessOrEqual(t, r.SeqsAssigned, len(s.Events))
		require.LessOrEqual(t, r.TimesAssigned, len(s.Events))
		require.Zero(t, r.Reshaped)
		for k, n := range r.DroppedKeys {
			require.Positive(t, n, k)
		}
		importertest.CheckEvents(t, s.Events)
		hdr := importertest.RoundTrip(t, s.Events, handle.WithID(s.ID), handle.WithCreatedAt(s.CreatedAt), handle.WithLabels(s.Labels))
		require.Equal(t, s.Labels, hdr.Labels, "labels as the header keeps them")

		// The vocabulary rewrites data, and the type only of a message
		// nobody typed (context) and of a typed command (a user/message).
		require.Equal(t, s.ID, v.ID)
		require.Equal(t, s.Labels, v.Labels)
		require.Len(t, v.Events, len(s.Events))
		changed := 0
		for i, e := range v.Events {
			raw := s.Events[i]
			require.Equal(t, raw.Seq, e.Seq)
			require.Equal(t, raw.Time, e.Time)
			if raw.Type != e.Type {
				require.Contains(t, [][2]string{{"user/message", importer.TypeContext}, {"user/message", "context/compacted"}, {"command/run", "user/message"},
					{"command/run", importer.TypeContext}, {"command/run", "context/compacted"}}, [2]string{raw.Type, e.Type})
			}
			if !bytes.Equal(raw.Data, e.Data) {
				changed++
				require.Contains(t, []string{"user/message", "assistant/message", "tool/call", "tool/result", "turn/end", "assistant/chunk", "command/run"}, raw.Type)
			}
		}
		require.LessOrEqual(t, changed, v.Report.Reshaped)
		importertest.CheckEvents(t, v.Events)
		importertest.RoundTrip(t, v.Events, handle.WithID(v.ID), handle.WithCreatedAt(v.CreatedAt), handle.WithLabels(v.Labels))
	})
}
