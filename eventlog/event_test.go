package eventlog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

func TestCompactData(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		same bool // returned without a copy
	}{
		{name: "already compact object", in: `{"a":[1,2,{"b":"x y"}],"c":null}`, want: `{"a":[1,2,{"b":"x y"}],"c":null}`, same: true},
		{name: "already compact scalar", in: `-12.5e+3`, want: `-12.5e+3`, same: true},
		{name: "already compact string with escapes", in: `"\u0041\"\\ \t"`, want: `"\u0041\"\\ \t"`, same: true},
		{name: "spaces around tokens", in: `{ "a" : [ 1 , 2 ,{ "b" : "x y" } ] }`, want: `{"a":[1,2,{"b":"x y"}]}`},
		{name: "tabs, CR and LF", in: "{\n\t\"a\":\r\n [true,\tfalse]\n}", want: `{"a":[true,false]}`},
		{name: "escapes kept as given", in: `{ "k" : "\u0041\n\/" }`, want: `{"k":"\u0041\n\/"}`},
		{name: "whitespace inside strings kept", in: `[ " a b " , "\" }  {" ]`, want: `[" a b ","\" }  {"]`},
		{name: "empty containers", in: `{ "a" : [ ] , "b" : { } }`, want: `{"a":[],"b":{}}`},
		{name: "trailing newline removed", in: "{\"a\":1}\n", want: `{"a":1}`},
		{name: "trailing spaces after a scalar removed", in: "7  ", want: `7`},
		{name: "leading whitespace removed", in: " \n{\"a\":1}", want: `{"a":1}`},
		{name: "non-ASCII kept", in: `[ "é" , "日本" ]`, want: `["é","日本"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			got, err := eventlog.CompactData(in)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			std, err := stdCompact(in)
			require.NoError(t, err)
			require.Equal(t, std, string(got), "same as encoding/json's Compact")
			if tt.same {
				require.Same(t, &in[0], &got[0], "compact data is returned without a copy")
				require.Len(t, got, len(in))
			} else {
				require.NotSame(t, &in[0], &got[0])
				require.Equal(t, tt.in, string(in), "input left as it was")
			}
		})
	}
	t.Run("nil stays nil", func(t *testing.T) {
		got, err := eventlog.CompactData(nil)
		require.NoError(t, err)
		require.Nil(t, got)
	})
}

// stdCompact is encoding/json's Compact, the reference docs/format.md §4 names.
func stdCompact(src []byte) (string, error) {
	var b bytes.Buffer
	err := json.Compact(&b, src)
	return b.String(), err
}

// invalidJSON is data that is not one JSON value.
var invalidJSON = []struct{ name, data string }{
	{"empty", ``},
	{"only whitespace", `  `},
	{"unclosed object", `{"a":1`},
	{"unclosed array", `[1,2`},
	{"missing value", `{"a":}`},
	{"trailing comma in array", `[1,]`},
	{"trailing comma in object", `{"a":1,}`},
	{"key not a string", `{a:1}`},
	{"missing colon", `{"a" 1}`},
	{"bare word", `hello`},
	{"truncated literal", `tru`},
	{"wrong literal", `nulL`},
	{"leading zero", `01`},
	{"bare minus", `-`},
	{"dot without digits", `1.`},
	{"exponent without digits", `1e`},
	{"plus sign", `+1`},
	{"unterminated string", `"abc`},
	{"bad escape", `"\x"`},
	{"short unicode escape", `"\u12"`},
	{"bad unicode escape", `"\u12g4"`},
	{"control character in string", "\"a\x01b\""},
	{"raw newline in string", "\"a\nb\""},
	// RFC 8259 §8.1: JSON text is UTF-8 (docs/format.md, Rows). Regression: these were
	// stored verbatim, and the log was then not JSON to any other reader.
	{"invalid UTF-8 in a string", "{\"text\":\"a\xff\xfeb\"}"},
	{"invalid UTF-8 in a key", "{\"\xff\":1}"},
	{"truncated UTF-8 sequence", "\"caf\xc3\""},
	{"overlong UTF-8 encoding", "\"\xc0\xaf\""},
	{"UTF-8-encoded surrogate", "\"\xed\xa0\x80\""},
	{"two values", `{} {}`},
	{"trailing bytes", `{"a":1}x`},
	{"trailing bytes after a scalar", `1 2`},
	{"NUL", "\x00"},
	{"single quotes", `'a'`},
	{"too deep", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)},
	{"far too deep, unclosed", strings.Repeat(`{"a":[`, 500000)},
}

func TestCompactDataInvalid(t *testing.T) {
	for _, tt := range invalidJSON {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventlog.CompactData([]byte(tt.data))
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			require.Contains(t, err.Error(), "data is not valid JSON")
			require.Nil(t, got)
			require.False(t, json.Valid([]byte(tt.data)) && utf8.ValidString(tt.data), "encoding/json (plus UTF-8) agrees")
		})
	}
	t.Run("deepest nesting allowed", func(t *testing.T) {
		deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
		got, err := eventlog.CompactData([]byte(deep))
		require.NoError(t, err)
		require.Equal(t, deep, string(got))
	})
	t.Run("too deep says so", func(t *testing.T) {
		_, err := eventlog.CompactData([]byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)))
		require.ErrorContains(t, err, "nesting too deep")
	})
}

func TestEventValidate(t *testing.T) {
	valid := []struct {
		name string
		e    eventlog.Event
	}{
		{"plain", ev(0, "tool/call", 1, `{"id":"c1"}`)},
		{"nil data", ev(0, "x", 0, "")},
		{"null data", ev(0, "x", 0, "null")},
		{"time 0", ev(0, "x", 0, "1")},
		{"any seq: the writer assigns it", ev(-5, "x", 1, "1")},
		{"data with whitespace: one JSON value", ev(0, "x", 1, " { \"a\" : 1 }\n")},
		{"128-character type", ev(0, strings.Repeat("A", 128), 1, "")},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) { require.NoError(t, tt.e.Validate()) })
	}
	invalid := []struct {
		name   string
		e      eventlog.Event
		reason string
	}{
		{"empty type", ev(0, "", 1, ""), "type must be 1 to 128 characters, got 0"},
		{"129-character type", ev(0, strings.Repeat("A", 129), 1, ""), "got 129"},
		{"type with a space", ev(0, "tool call", 1, ""), "character outside"},
		{"type with a quote", ev(0, `a"b`, 1, ""), "character outside"},
		{"type with a backslash", ev(0, `a\b`, 1, ""), "character outside"},
		{"type with a newline", ev(0, "a\nb", 1, ""), "character outside"},
		{"type with a non-ASCII letter", ev(0, "café", 1, ""), "character outside"},
		{"negative time", ev(0, "x", -1, ""), "time -1 is negative"},
		{"data not JSON", ev(0, "x", 1, "{nope}"), "not valid JSON"},
		{"data with trailing bytes", ev(0, "x", 1, `{}garbage`), "not valid JSON"},
		{"data of two values", ev(0, "x", 1, `1 2`), "not valid JSON"},
		{"empty data", eventlog.Event{Type: "x", Time: 1, Data: []byte{}}, "not valid JSON"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.e.Validate()
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent)
			require.NotErrorIs(t, err, eventlog.ErrCorrupt)
			require.Contains(t, err.Error(), tt.reason)
		})
	}
	for _, tt := range invalidJSON {
		t.Run("data "+tt.name, func(t *testing.T) {
			e := eventlog.Event{Type: "x", Time: 1, Data: []byte(tt.data)}
			require.ErrorIs(t, e.Validate(), eventlog.ErrInvalidEvent)
		})
	}
}

func TestValidateType(t *testing.T) {
	for _, typ := range []string{"x", "tool/call", "assistant/chunk", "A-Z_a.z:0/9", strings.Repeat("z", 128)} {
		require.NoError(t, eventlog.ValidateType(typ), typ)
	}
	for c := 0; c < 256; c++ {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:/-", rune(c))
		err := eventlog.ValidateType("a" + string([]byte{byte(c)}))
		if ok {
			require.NoError(t, err, "byte %q", c)
		} else {
			require.ErrorIs(t, err, eventlog.ErrInvalidEvent, "byte %q", c)
		}
	}
	require.ErrorIs(t, eventlog.ValidateType(""), eventlog.ErrInvalidEvent)
	require.ErrorIs(t, eventlog.ValidateType(strings.Repeat("z", 129)), eventlog.ErrInvalidEvent)
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{testID, true},
		{testParent, true},
		{"00000000000000000000000000", true},
		{"7ZZZZZZZZZZZZZZZZZZZZZZZZZ", true}, // the largest 128-bit value
		{"8ZZZZZZZZZZZZZZZZZZZZZZZZZ", false},
		{"ZZZZZZZZZZZZZZZZZZZZZZZZZZ", false},
		{strings.ToLower(testID), false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9Pa", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9PI", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9PL", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9PO", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9PU", false},
		{testID[:25], false},
		{testID + "A", false},
		{"", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9P-", false},
		{"01JDX3N0Q3Z8Y6W2D1V5K7M9P ", false},
		{"../../../../../etc/passwd0", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.ok, eventlog.ValidID(tt.id), "%q", tt.id)
	}
}

func TestAppendCanon(t *testing.T) {
	tests := []struct {
		name string
		e    eventlog.Event
		want string
	}{
		{"spec row", ev(7, "tool/call", 1764450000123, `{"id":"c1","name":"read_file","args":{"path":"a.go"}}`),
			`{"seq":7,"type":"tool/call","time":1764450000123,"data":{"id":"c1","name":"read_file","args":{"path":"a.go"}}}`},
		{"nil data is null", ev(0, "step/start", 0, ""), `{"seq":0,"type":"step/start","time":0,"data":null}`},
		{"data bytes as stored", ev(3, "x", 5, `"\u0041"`), `{"seq":3,"type":"x","time":5,"data":"\u0041"}`},
		{"large numbers", ev(9223372036854775807, "x", 9223372036854775807, `[]`),
			`{"seq":9223372036854775807,"type":"x","time":9223372036854775807,"data":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, string(eventlog.AppendCanon(nil, tt.e)))
			require.Equal(t, "prefix"+tt.want, string(eventlog.AppendCanon([]byte("prefix"), tt.e)))
			require.Equal(t, tt.want, string(eventlog.Canon(tt.e)))
			require.Equal(t, len(tt.want), eventlog.RowSize(tt.e))
			back, err := eventlog.DecodeRow([]byte(tt.want))
			require.NoError(t, err)
			require.Equal(t, []eventlog.Event{tt.e}, back)
		})
	}
}

func TestErrors(t *testing.T) {
	ce := &eventlog.CorruptError{Path: "a/b.jsonl", Offset: 120, Seq: 7, Reason: "bad row"}
	require.Equal(t, `eventlog: corrupt log in "a/b.jsonl" at offset 120 (seq 7): bad row (to cut the log at the damage: logtool repair --salvage)`, ce.Error())
	require.ErrorIs(t, ce, eventlog.ErrCorrupt)
	ce = &eventlog.CorruptError{Offset: 0, Seq: -1, Reason: "bad header"}
	require.Equal(t, `eventlog: corrupt log at offset 0: bad header (the start of the file is damaged, so a salvage would keep nothing: restore the file from a copy)`, ce.Error())

	ce = &eventlog.CorruptError{Offset: -1, Seq: 4, Reason: "odd", Fix: "do this"}
	require.Equal(t, `eventlog: corrupt log (seq 4): odd (do this)`, ce.Error(), "offset unknown, a fix of its own")

	ve := &eventlog.VersionError{Path: "a.jsonl", Found: 2, Supported: []int{1}}
	require.Equal(t, `eventlog: unsupported format version 2 in "a.jsonl" (supported: [1])`, ve.Error())
	require.ErrorIs(t, ve, eventlog.ErrVersion)
	require.Equal(t, []int{1}, eventlog.SupportedVersions())
}

// CheckReserved refuses what a writer refuses of the reserved types, with
// a reason that says what is wrong and a fix that works (a fork before the
// event: a salvage cannot cut a well-formed row). Regression: replay said
// "invalid rollback: <nil>" and advised a salvage that did nothing.
func TestCheckReserved(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		e      eventlog.Event
		reason string // "": valid
	}{
		{"not reserved", eventlog.Event{Seq: 3, Type: "x", Data: json.RawMessage(`{"to":9}`)}, ""},
		{"checkpoint", eventlog.Event{Seq: 3, Type: "checkpoint", Data: json.RawMessage(`{"log":"` + digest + `"}`)}, ""},
		{"checkpoint bad digest", eventlog.Event{Seq: 3, Type: "checkpoint", Data: json.RawMessage(`{"log":"bad"}`)}, "invalid checkpoint"},
		{"rollback", eventlog.Event{Seq: 3, Type: "rollback", Data: json.RawMessage(`{"to":2}`)}, ""},
		{"rollback to itself", eventlog.Event{Seq: 3, Type: "rollback", Data: json.RawMessage(`{"to":3}`)}, "to seq 3 is not before the rollback's own seq"},
		{"rollback forward", eventlog.Event{Seq: 1, Type: "rollback", Data: json.RawMessage(`{"to":5}`)}, "to seq 5 is not before"},
		{"rollback no to", eventlog.Event{Seq: 3, Type: "rollback", Data: json.RawMessage(`{}`)}, "invalid rollback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ce := eventlog.CheckReserved(tt.e)
			r, pe := eventlog.ParseReserved(tt.e)
			require.Equal(t, ce, pe)
			if tt.reason == "" {
				require.Nil(t, ce)
				switch tt.e.Type { // parsed once, for the caller
				case "rollback":
					require.Equal(t, int64(2), r.Rollback.To)
				case "checkpoint":
					require.Equal(t, digest, r.Checkpoint.Log)
				}
				return
			}
			require.NotNil(t, ce)
			require.ErrorIs(t, ce, eventlog.ErrCorrupt)
			require.Equal(t, tt.e.Seq, ce.Seq)
			require.Equal(t, int64(-1), ce.Offset)
			require.Contains(t, ce.Reason, tt.reason)
			require.NotContains(t, ce.Error(), "<nil>")
			require.NotContains(t, ce.Error(), "salvage")
			require.Contains(t, ce.Error(), fmt.Sprintf("logtool fork --at %d", tt.e.Seq-1))
		})
	}
}

// Storable is the check Append and the importers share: valid events with
// compacted data, reserved data that parses, rows within the limit at the
// widest seq — measured after compaction (the importers measured the
// source bytes, and refused padded data Append would take).
func TestStorable(t *testing.T) {
	padded := `{"text":"` + strings.Repeat("a", eventlog.MaxRowSize-200) + `"` + strings.Repeat(" ", 1000) + `}`
	tests := []struct {
		name string
		e    eventlog.Event
		err  error // nil: storable
	}{
		{"plain", eventlog.Event{Type: "x", Data: json.RawMessage(`{ "a" : 1 }`)}, nil},
		{"padded under the limit once compacted", eventlog.Event{Type: "x", Data: json.RawMessage(padded)}, nil},
		{"too large", eventlog.Event{Type: "x", Data: json.RawMessage(`"` + strings.Repeat("a", eventlog.MaxRowSize) + `"`)}, eventlog.ErrTooLarge},
		{"bad type", eventlog.Event{Type: "Bad Type"}, eventlog.ErrInvalidEvent},
		{"bad JSON", eventlog.Event{Type: "x", Data: json.RawMessage(`{`)}, eventlog.ErrInvalidEvent},
		{"bad rollback", eventlog.Event{Type: "rollback", Data: json.RawMessage(`{"to":"x"}`)}, eventlog.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventlog.Storable(tt.e)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.True(t, json.Valid(got.Data))
			require.LessOrEqual(t, len(got.Data), len(tt.e.Data), "compacted")
		})
	}
}

// intLen sizes rows: it must be the length of the digits AppendInt writes,
// at every magnitude and sign.
func TestIntLen(t *testing.T) {
	vals := []int64{0, 1, -1, 9, 10, -9, -10, 99, 100, 1764450000000, 1 << 62, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		vals = append(vals, p-1, p, -p, -(p - 1))
	}
	for _, v := range vals {
		require.Equal(t, len(strconv.AppendInt(nil, v, 10)), eventlog.IntLen(v), "%d", v)
	}
}
