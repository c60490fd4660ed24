package importertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/importer"
)

// CheckSession fails t unless s is a session `logtool import` writes as it
// is: seqs from 0, every event valid, its data compact JSON and its row
// within eventlog.MaxRowSize; createdAt >= 0; the labels "source" (want)
// and "sourceFile" set; every spawn at a tool/call of its id; every unmapped
// count positive; no parent (Convert links parents, not Parse). Then the
// session is written to a memory store and read back: the same events,
// labels and createdAt.
func CheckSession(t testing.TB, s importer.Session, want string) {
	t.Helper()
	require.GreaterOrEqual(t, s.CreatedAt, int64(0), "createdAt")
	require.Equal(t, want, s.Labels["source"])
	require.NotEmpty(t, s.Labels["sourceFile"])
	require.Nil(t, s.Parent, "Parse links no parent")
	require.Equal(t, int64(len(s.Events)), s.Count, "events counted")
	for kind, n := range s.Unmapped {
		require.Positive(t, n, "unmapped %q", kind)
	}
	CheckEvents(t, s.Events)
	for i, e := range s.Events {
		compact, err := eventlog.CompactData(e.Data)
		require.NoError(t, err)
		require.Equal(t, string(compact), string(e.Data), "seq %d: data compact", i)
	}
	for key, sp := range s.Spawns {
		require.True(t, sp.Seq >= 0 && sp.Seq < int64(len(s.Events)), "spawn %q at seq %d of %d events", key, sp.Seq, len(s.Events))
		e := s.Events[sp.Seq]
		require.Equal(t, "tool/call", e.Type, "spawn %q at seq %d", key, sp.Seq)
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(e.Data, &d))
		require.Equal(t, sp.Call, d.ID, "spawn %q: the call at seq %d", key, sp.Seq)
	}
	hdr := RoundTrip(t, s.Events, handle.WithCreatedAt(s.CreatedAt), handle.WithLabels(s.Labels))
	require.Equal(t, s.CreatedAt, hdr.CreatedAt)
	require.Equal(t, s.Labels, hdr.Labels, "labels as the header keeps them")
}

// CheckEvents fails t unless events are what a log holds from its start:
// seqs 0, 1, 2…, each event valid (eventlog.Event.Validate) and its row,
// at the widest seq a row can have, within eventlog.MaxRowSize (as
// handle.Append checks).
func CheckEvents(t testing.TB, events []eventlog.Event) {
	t.Helper()
	for i, e := range events {
		require.Equal(t, int64(i), e.Seq, "seqs from 0")
		require.NoError(t, e.Validate(), "seq %d", i)
		e.Seq = 1 << 62
		require.LessOrEqual(t, eventlog.RowSize(e), eventlog.MaxRowSize, "seq %d: row size", i)
	}
}

// RoundTrip writes events (seqs from 0) as a new session of a memory store,
// created with opts, as `logtool import` does (AppendAt 0, flush, close),
// reads the session back and fails t unless it holds the same events (their
// data compacted); it returns the header read back.
func RoundTrip(t testing.TB, events []eventlog.Event, opts ...handle.Option) eventlog.Header {
	t.Helper()
	ctx := t.Context()
	st := file.New(afero.NewMemMapFs(), "/store")
	h, err := st.Create(ctx, opts...)
	require.NoError(t, err)
	if len(events) > 0 {
		last, err := h.AppendAt(ctx, 0, events...)
		require.NoError(t, err, "the log takes the events")
		require.Equal(t, int64(len(events)-1), last)
		require.NoError(t, h.Flush(ctx))
	}
	require.NoError(t, h.Close())

	r, err := st.Open(ctx, h.ID(), handle.ReadOnly)
	require.NoError(t, err)
	defer r.Close()
	i := 0
	for e, err := range r.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		require.Less(t, i, len(events), "more events read back than written")
		want := events[i]
		want.Data, err = eventlog.CompactData(want.Data)
		require.NoError(t, err)
		require.Equal(t, string(eventlog.Canon(want)), string(eventlog.Canon(e)), "seq %d read back", i)
		i++
	}
	require.Equal(t, len(events), i, "events read back")
	return r.Header()
}

// lineRE finds the line an error names: "line N: " at the start of the
// message or of a part of it (so not in a quoted value of the input).
var lineRE = regexp.MustCompile(`(?:^|: )line (\d+): `)

// CheckError fails t unless err, returned for the input in, is a clear
// error about the content: errors.Is(err, sentinel), a message, and a line
// it names (the first "line N: " of the message) within in's lines.
func CheckError(t testing.TB, err error, in []byte, sentinel error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, sentinel), "%v", err)
	require.NotEmpty(t, err.Error())
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, perr := strconv.Atoi(m[1])
		require.NoError(t, perr, "%v", err)
		lines := bytes.Count(in, []byte("\n")) + 1
		require.True(t, n >= 1 && n <= lines, "line %d of an input of %d lines: %v", n, lines, err)
	}
}

// Fields reads an event's data as an object (nil when it is not one).
func Fields(e eventlog.Event) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(e.Data, &m) != nil {
		return nil
	}
	return m
}

// CheckLossless fails t unless the session s, imported by imp from the
// bytes src, keeps every source record: the records its events carry
// (importer.RecordOf), in seq order, are imp.Records of the bytes the
// session was made of (src; for a session cut short — Partial, Torn —
// src's first s.Bytes), record by record, and s.Records counts them.
func CheckLossless(t testing.TB, imp importer.Importer, src []byte, s importer.Session) {
	t.Helper()
	require.Empty(t, s.Skipped, "CheckLossless takes no session made past bad lines")
	if s.Partial != nil || s.Torn != nil {
		src = src[:s.Bytes]
	}
	var want []json.RawMessage
	require.NoError(t, imp.Records(bytes.NewReader(src), func(r json.RawMessage) error {
		want = append(want, r)
		return nil
	}))
	var got []json.RawMessage
	for _, e := range s.Events {
		if r, ok := importer.RecordOf(imp.Name(), e); ok {
			got = append(got, r)
		}
	}
	for i := range min(len(want), len(got)) {
		require.Equal(t, string(want[i]), string(got[i]), "%s: record %d of %d rebuilt from the session", s.Source, i+1, len(want))
	}
	require.Len(t, got, len(want), "%s: records rebuilt from the session", s.Source)
	require.Equal(t, len(want), s.Records, "%s: records counted", s.Source)
}

// Brief renders an event as "type data" for a test's expectations, a
// record it carries shortened to "record":@ (a vocabulary event's
// "source" is the last key of its data, and "record" the last of the
// source's) and the data of a namespaced event (format/…) to @.
func Brief(format string, e eventlog.Event) string {
	d := string(e.Data)
	if strings.HasPrefix(e.Type, format+"/") {
		return e.Type + " @"
	}
	if i := strings.LastIndex(d, `,"record":`); i >= 0 && strings.HasSuffix(d, "}}") && strings.Contains(d[:i], `"source":{"line":`) {
		d = d[:i] + `,"record":@}}`
	}
	return e.Type + " " + d
}
