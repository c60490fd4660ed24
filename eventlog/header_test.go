package eventlog_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

func TestHeaderRoundTrip(t *testing.T) {
	withParent := func(mode, call string) eventlog.Header {
		h := logfile.NewHeader(testID, testTime)
		h.Parent = &eventlog.Parent{ID: testParent, Seq: 41, Mode: mode, Call: call}
		return h
	}
	labelled := logfile.NewHeader(testID, 0)
	labelled.Labels = map[string]string{"agent": "coder", "cwd": "/src/app", "title": "<a & b> \"quoted\" é\n"}
	full := withParent(eventlog.ModeFork, "")
	full.Labels = map[string]string{"agent": "coder"}
	tests := []struct {
		name     string
		h        eventlog.Header
		want     string // the encoded row, when pinned
		firstSeq int64
	}{
		{
			name: "minimal", h: logfile.NewHeader(testID, testTime),
			want: `{"format":"sessionlog","version":1,"id":"` + testID + `","createdAt":1764450000000}`,
		},
		{
			name: "fork with labels", h: full, firstSeq: 42,
			want: `{"format":"sessionlog","version":1,"id":"` + testID + `","createdAt":1764450000000,"parent":{"id":"` + testParent + `","seq":41,"mode":"fork"},"labels":{"agent":"coder"}}`,
		},
		{name: "child with call", h: withParent(eventlog.ModeChild, "call_1"), firstSeq: 0},
		{name: "fork of seq 0", h: func() eventlog.Header { h := withParent(eventlog.ModeFork, ""); h.Parent.Seq = 0; return h }(), firstSeq: 1},
		{name: "labels with characters to escape", h: labelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := eventlog.EncodeHeader(tt.h)
			require.NoError(t, err)
			if tt.want != "" {
				require.Equal(t, tt.want, string(line))
			}
			require.NotContains(t, string(line), "\n")
			got, err := eventlog.DecodeHeader(line)
			require.NoError(t, err)
			require.Equal(t, tt.h, got)
			require.Equal(t, tt.firstSeq, got.FirstSeq())
		})
	}
}

func TestDecodeHeader(t *testing.T) {
	const min = `"format":"sessionlog","version":1,"id":"` + testID + `","createdAt":5`
	t.Run("unknown keys are ignored", func(t *testing.T) {
		h, err := eventlog.DecodeHeader([]byte(`{"future":{"x":[1,2]},` + min + `,"zz":null}`))
		require.NoError(t, err)
		require.Equal(t, logfile.NewHeader(testID, 5), h)
	})
	t.Run("keys in any order, whitespace", func(t *testing.T) {
		h, err := eventlog.DecodeHeader([]byte(` { "createdAt" : 5 , "id" : "` + testID + `" , "version" : 1 , "format" : "sessionlog" } `))
		require.NoError(t, err)
		require.Equal(t, logfile.NewHeader(testID, 5), h)
	})
	// Keys are exact: encoding/json would read "ID" as "id" and "Parent"
	// as "parent"; docs/format.md §3 ignores unknown keys. Regression: both were
	// taken, so an unknown "Parent" key made a fork of a plain session.
	t.Run("keys in another case are unknown keys", func(t *testing.T) {
		other := "01JDX3N0Q3Z8Y6W2D1V5K7M9PA"
		h, err := eventlog.DecodeHeader([]byte(`{` + min + `,"ID":"` + other + `","Parent":{"id":"` + testParent + `","seq":3,"mode":"fork"},"CREATEDAT":9}`))
		require.NoError(t, err)
		require.Equal(t, logfile.NewHeader(testID, 5), h)
	})
	t.Run("no createdAt", func(t *testing.T) {
		_, err := eventlog.DecodeHeader([]byte(`{"format":"sessionlog","version":1,"id":"` + testID + `"}`))
		require.ErrorContains(t, err, "no createdAt")
	})
	t.Run("parent null is no parent", func(t *testing.T) {
		h, err := eventlog.DecodeHeader([]byte(`{` + min + `,"parent":null}`))
		require.NoError(t, err)
		require.Nil(t, h.Parent)
	})
	bad := []struct {
		name   string
		line   string
		reason string
	}{
		{"empty", ``, "header is not a JSON object"},
		{"not JSON", `sessionlog`, "header is not a JSON object"},
		{"array", `[]`, "header is not a JSON object"},
		{"trailing bytes", `{` + min + `} x`, "header is not a JSON object"},
		{"null", `null`, "not a sessionlog file"},
		{"no format", `{"version":1,"id":"` + testID + `","createdAt":5}`, "not a sessionlog file"},
		{"format of another file", `{"format":"wal","version":1}`, "not a sessionlog file"},
		{"format not a string", `{"format":1,"version":1}`, "header is not a JSON object"},
		{"no version", `{"format":"sessionlog","id":"` + testID + `","createdAt":5}`, "header version is not an integer"},
		{"version null", `{"format":"sessionlog","version":null}`, "header version is not an integer"},
		{"version string", `{"format":"sessionlog","version":"1"}`, "header version is not an integer"},
		{"version float", `{"format":"sessionlog","version":1.0}`, "header version is not an integer"},
		{"version exponent", `{"format":"sessionlog","version":1e0}`, "header version is not an integer"},
		{"version negative", `{"format":"sessionlog","version":-1}`, "header version is not an integer"},
		{"no id", `{"format":"sessionlog","version":1,"createdAt":5}`, "bad header: id"},
		{"id in lower case", `{` + strings.Replace(min, testID, strings.ToLower(testID), 1) + `}`, "bad header: id"},
		{"id with I", `{` + strings.Replace(min, testID, "01JDX3N0Q3Z8Y6W2D1V5K7M9PI", 1) + `}`, "bad header: id"},
		{"id too short", `{` + strings.Replace(min, testID, testID[:25], 1) + `}`, "bad header: id"},
		{"createdAt float", `{` + strings.Replace(min, `"createdAt":5`, `"createdAt":5.5`, 1) + `}`, "bad header"},
		{"createdAt exponent", `{` + strings.Replace(min, `"createdAt":5`, `"createdAt":5e3`, 1) + `}`, "bad header"},
		{"createdAt string", `{` + strings.Replace(min, `"createdAt":5`, `"createdAt":"5"`, 1) + `}`, "bad header"},
		{"createdAt negative", `{` + strings.Replace(min, `"createdAt":5`, `"createdAt":-5`, 1) + `}`, "createdAt -5 is negative"},
		{"parent mode bogus", `{` + min + `,"parent":{"id":"` + testParent + `","seq":1,"mode":"bogus"}}`, `parent mode "bogus"`},
		{"parent mode missing", `{` + min + `,"parent":{"id":"` + testParent + `","seq":1}}`, `parent needs id, seq and mode`},
		{"parent seq missing", `{` + min + `,"parent":{"id":"` + testParent + `","mode":"fork"}}`, `parent needs id, seq and mode`},
		{"parent keys in another case", `{` + min + `,"parent":{"ID":"` + testParent + `","Seq":1,"Mode":"fork"}}`, `parent needs id, seq and mode`},
		{"parent seq negative", `{` + min + `,"parent":{"id":"` + testParent + `","seq":-1,"mode":"fork"}}`, "parent seq -1 is negative"},
		{"parent seq float", `{` + min + `,"parent":{"id":"` + testParent + `","seq":1.5,"mode":"fork"}}`, "bad header"},
		{"parent fork seq out of range", `{` + min + `,"parent":{"id":"` + testParent + `","seq":9223372036854775807,"mode":"fork"}}`, "out of range"},
		{"parent id bad", `{` + min + `,"parent":{"id":"nope","seq":1,"mode":"fork"}}`, `parent id "nope"`},
		{"parent not an object", `{` + min + `,"parent":"` + testParent + `"}`, "bad header"},
		{"label not a string", `{` + min + `,"labels":{"a":1}}`, "bad header"},
		{"label with invalid UTF-8", `{` + min + `,"labels":{"a":"` + "\xff\xfe" + `"}}`, "header is not UTF-8"},
		{"too large", `{` + min + `,"labels":{"a":"` + strings.Repeat("x", eventlog.MaxRowSize) + `"}}`, "exceeds the row size limit"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eventlog.DecodeHeader([]byte(tt.line))
			requireCorrupt(t, err, 0, -1, tt.reason)
		})
	}
	for _, v := range []string{"0", "2", "3"} {
		t.Run("version "+v, func(t *testing.T) {
			_, err := eventlog.DecodeHeader([]byte(`{"format":"sessionlog","version":` + v + `,"id":"x"}`))
			var ve *eventlog.VersionError
			require.ErrorAs(t, err, &ve)
			require.ErrorIs(t, err, eventlog.ErrVersion)
			require.Equal(t, v, strconv.FormatInt(ve.Found, 10))
		})
	}
}

func TestEncodeHeaderInvalid(t *testing.T) {
	ok := logfile.NewHeader(testID, testTime)
	tests := []struct {
		name   string
		edit   func(h *eventlog.Header)
		reason string
	}{
		{"format", func(h *eventlog.Header) { h.Format = "x" }, `format is "x"`},
		{"version", func(h *eventlog.Header) { h.Version = 2 }, "unsupported format version 2"},
		{"id", func(h *eventlog.Header) { h.ID = "nope" }, `id "nope"`},
		{"createdAt", func(h *eventlog.Header) { h.CreatedAt = -1 }, "createdAt -1 is negative"},
		{"parent id", func(h *eventlog.Header) { h.Parent = &eventlog.Parent{ID: "x", Mode: eventlog.ModeFork} }, `parent id "x"`},
		{"parent seq", func(h *eventlog.Header) {
			h.Parent = &eventlog.Parent{ID: testParent, Seq: -1, Mode: eventlog.ModeFork}
		}, "parent seq -1"},
		{"parent mode", func(h *eventlog.Header) { h.Parent = &eventlog.Parent{ID: testParent, Mode: "bogus"} }, `parent mode "bogus"`},
		// encoding/json would write U+FFFD instead: not the labels given.
		{"label value not UTF-8", func(h *eventlog.Header) { h.Labels = map[string]string{"a": "\xff"} }, "is not UTF-8"},
		{"label key not UTF-8", func(h *eventlog.Header) { h.Labels = map[string]string{"\xfe": "a"} }, "is not UTF-8"},
		{"parent call not UTF-8", func(h *eventlog.Header) {
			h.Parent = &eventlog.Parent{ID: testParent, Mode: eventlog.ModeChild, Call: "\xff"}
		}, "is not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ok
			tt.edit(&h)
			line, err := eventlog.EncodeHeader(h)
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			require.ErrorContains(t, err, tt.reason)
			require.Nil(t, line)
		})
	}
}

// A header DecodeHeader would refuse is never encoded: a session created
// with it could not be opened. Regression: labels of 16 MiB made a
// session that every open called corrupt.
func TestEncodeHeaderTooLarge(t *testing.T) {
	h := logfile.NewHeader(testID, testTime)
	h.Labels = map[string]string{"t": strings.Repeat("a", eventlog.MaxRowSize)}
	_, err := eventlog.EncodeHeader(h)
	require.ErrorIs(t, err, eventlog.ErrTooLarge)
	require.ErrorContains(t, err, "labels of 16777217 bytes", "refused before it is encoded")
	// Within the limit as text, over it with the header's other keys.
	h.Labels = map[string]string{"t": strings.Repeat("a", eventlog.MaxRowSize-10)}
	_, err = eventlog.EncodeHeader(h)
	require.ErrorIs(t, err, eventlog.ErrTooLarge)
	require.ErrorContains(t, err, "header of 16777")

	h.Labels = map[string]string{"t": strings.Repeat("a", eventlog.MaxRowSize-200)}
	line, err := eventlog.EncodeHeader(h)
	require.NoError(t, err, "just under the limit")
	back, err := eventlog.DecodeHeader(line)
	require.NoError(t, err)
	require.Equal(t, h, back)
}

// A parent in words names its mode, session and seq, and a child's call.
func TestParentString(t *testing.T) {
	for _, tc := range []struct {
		p    eventlog.Parent
		want string
	}{
		{eventlog.Parent{ID: "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", Seq: 7, Mode: eventlog.ModeFork}, "fork of 01JDX3N0Q3Z8Y6W2D1V5K7M9PA at seq 7"},
		{eventlog.Parent{ID: "01JDX3N0Q3Z8Y6W2D1V5K7M9PA", Seq: 0, Mode: eventlog.ModeChild, Call: "c1"}, "child of 01JDX3N0Q3Z8Y6W2D1V5K7M9PA at seq 0 (call c1)"},
	} {
		require.Equal(t, tc.want, tc.p.String())
	}
}
