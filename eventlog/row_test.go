package eventlog_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

func TestDecodeRowValid(t *testing.T) {
	type128 := strings.Repeat("a", eventlog.MaxTypeLen)
	tests := []struct {
		name string
		line string
		want []eventlog.Event
	}{
		{
			name: "unpacked canon",
			line: `{"seq":7,"type":"tool/call","time":1764450000123,"data":{"id":"c1","name":"read_file","args":{"path":"a.go"}}}`,
			want: []eventlog.Event{ev(7, "tool/call", 1764450000123, `{"id":"c1","name":"read_file","args":{"path":"a.go"}}`)},
		},
		{
			name: "keys in reverse order",
			line: `{"data":{"a":1},"time":5,"type":"x","seq":3}`,
			want: []eventlog.Event{ev(3, "x", 5, `{"a":1}`)},
		},
		{
			name: "keys type first",
			line: `{"type":"x","data":"s","seq":3,"time":5}`,
			want: []eventlog.Event{ev(3, "x", 5, `"s"`)},
		},
		{
			name: "whitespace between tokens is skipped, data kept as stored",
			line: " \t{ \"seq\" : 3 ,\r\"type\"\t:\"x\" , \"time\" : 5 , \"data\" : [ 1 , 2 ] } \r",
			want: []eventlog.Event{ev(3, "x", 5, `[ 1 , 2 ]`)},
		},
		{
			name: "data absent means nil",
			line: `{"seq":0,"type":"step/start","time":0}`,
			want: []eventlog.Event{ev(0, "step/start", 0, "")},
		},
		{
			name: "data null means nil",
			line: `{"seq":0,"type":"step/start","time":0,"data":null}`,
			want: []eventlog.Event{ev(0, "step/start", 0, "")},
		},
		{
			name: "data scalars",
			line: `{"seq":1,"type":"x","time":2,"data":-1.5e3}`,
			want: []eventlog.Event{ev(1, "x", 2, `-1.5e3`)},
		},
		{
			name: "data false",
			line: `{"seq":1,"type":"x","time":2,"data":false}`,
			want: []eventlog.Event{ev(1, "x", 2, `false`)},
		},
		{
			name: "escapes in data kept as given",
			line: `{"seq":1,"type":"x","time":2,"data":"\u0041\n\"\/"}`,
			want: []eventlog.Event{ev(1, "x", 2, `"\u0041\n\"\/"`)},
		},
		{
			name: "escaped valid type",
			line: `{"seq":1,"type":"tool\/call","time":2}`,
			want: []eventlog.Event{ev(1, "tool/call", 2, "")},
		},
		{
			name: "unicode-escaped type",
			line: `{"seq":1,"type":"\u0074ool/call","time":2}`,
			want: []eventlog.Event{ev(1, "tool/call", 2, "")},
		},
		{
			name: "escaped key names the same key",
			line: `{"se\u0071":1,"type":"x","time":2}`,
			want: []eventlog.Event{ev(1, "x", 2, "")},
		},
		{
			name: "type of 128 characters",
			line: `{"seq":1,"type":"` + type128 + `","time":2}`,
			want: []eventlog.Event{ev(1, type128, 2, "")},
		},
		{
			name: "type with every allowed punctuation",
			line: `{"seq":1,"type":"A-z_0.9:/","time":2}`,
			want: []eventlog.Event{ev(1, "A-z_0.9:/", 2, "")},
		},
		{
			name: "largest seq and time",
			line: `{"seq":9223372036854775807,"type":"x","time":9223372036854775807}`,
			want: []eventlog.Event{ev(9223372036854775807, "x", 9223372036854775807, "")},
		},
		{
			name: "packed n=2",
			line: `{"seq":12,"type":"assistant/chunk","n":2,"time":[5,6],"data":[{"text":"He"},{"text":"llo"}]}`,
			want: []eventlog.Event{
				ev(12, "assistant/chunk", 5, `{"text":"He"}`),
				ev(13, "assistant/chunk", 6, `{"text":"llo"}`),
			},
		},
		{
			name: "packed n=3 as in the spec",
			line: `{"seq":12,"type":"assistant/chunk","n":3,"time":[1764450000200,1764450000201,1764450000205],"data":[{"text":"He"},{"text":"llo"},{"text":"!"}]}`,
			want: []eventlog.Event{
				ev(12, "assistant/chunk", 1764450000200, `{"text":"He"}`),
				ev(13, "assistant/chunk", 1764450000201, `{"text":"llo"}`),
				ev(14, "assistant/chunk", 1764450000205, `{"text":"!"}`),
			},
		},
		{
			name: "packed of any type, keys in any order, whitespace, null elements",
			line: `{ "data" : [ null , [1, 2] , {} ] , "n" : 3 , "time" : [ 0 , 7 , 0 ] , "type" : "x" , "seq" : 0 }`,
			want: []eventlog.Event{ev(0, "x", 0, ""), ev(1, "x", 7, `[1, 2]`), ev(2, "x", 0, `{}`)},
		},
		{
			name: "packed seq at the top of its range",
			line: `{"seq":4611686018427387904,"type":"x","n":2,"time":[1,2],"data":[1,2]}`,
			want: []eventlog.Event{ev(1<<62, "x", 1, `1`), ev(1<<62+1, "x", 2, `2`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventlog.DecodeRow([]byte(tt.line))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeRowDataIsACopy(t *testing.T) {
	line := []byte(`{"seq":0,"type":"x","n":2,"time":[1,2],"data":[{"a":1},{"b":2}]}`)
	got, err := eventlog.DecodeRow(line)
	require.NoError(t, err)
	for i := range line {
		line[i] = 'X'
	}
	require.Equal(t, `{"a":1}`, string(got[0].Data))
	require.Equal(t, `{"b":2}`, string(got[1].Data))
	require.Equal(t, "x", got[0].Type)
}

// corruptRows are rows that must be refused, each with a substring of the
// reason. They are shared with the Reader tests.
var corruptRows = []struct {
	name   string
	line   string
	reason string
}{
	{"empty line", ``, "not a JSON object"},
	{"only spaces", `   `, "not a JSON object"},
	{"array", `[1,2]`, "not a JSON object"},
	{"string", `"seq"`, "not a JSON object"},
	{"null", `null`, "not a JSON object"},
	{"NUL bytes", "\x00\x00\x00", "not a JSON object"},
	{"NUL inside a row", "{\"seq\":0,\"type\":\"x\x00\",\"time\":1}", "bad value"},
	{"empty object", `{}`, `missing key "seq"`},
	{"missing seq", `{"type":"x","time":1,"data":{}}`, `missing key "seq"`},
	{"missing type", `{"seq":0,"time":1,"data":{}}`, `missing key "type"`},
	{"missing time", `{"seq":0,"type":"x","data":{}}`, `missing key "time"`},
	{"unknown key", `{"seq":0,"type":"x","time":1,"foo":1}`, `unknown key "foo"`},
	{"key differing in case", `{"Seq":0,"type":"x","time":1}`, `unknown key "Seq"`},
	{"repeated seq", `{"seq":0,"seq":0,"type":"x","time":1}`, `repeated key "seq"`},
	{"repeated type", `{"seq":0,"type":"x","type":"x","time":1}`, `repeated key "type"`},
	{"repeated time", `{"seq":0,"type":"x","time":1,"time":1}`, `repeated key "time"`},
	{"repeated data", `{"seq":0,"type":"x","time":1,"data":1,"data":1}`, `repeated key "data"`},
	{"repeated n", `{"seq":0,"type":"x","n":2,"n":2,"time":[1,2],"data":[1,2]}`, `repeated key "n"`},
	{"repeated key via escape", `{"seq":0,"s\u0065q":0,"type":"x","time":1}`, `repeated key "seq"`},
	{"seq float", `{"seq":1.0,"type":"x","time":1}`, "seq: not a JSON integer"},
	{"seq exponent", `{"seq":1e3,"type":"x","time":1}`, "seq: not a JSON integer"},
	{"seq negative", `{"seq":-1,"type":"x","time":1}`, "seq: negative integer"},
	{"seq minus zero", `{"seq":-0,"type":"x","time":1}`, "seq: negative integer"},
	{"seq string", `{"seq":"1","type":"x","time":1}`, "seq: not a JSON integer"},
	{"seq null", `{"seq":null,"type":"x","time":1}`, "seq: not a JSON integer"},
	{"seq overflows int64", `{"seq":9223372036854775808,"type":"x","time":1}`, "seq: integer out of range"},
	{"seq leading zero", `{"seq":01,"type":"x","time":1}`, "expected ',' or '}'"},
	{"time float", `{"seq":0,"type":"x","time":1.0}`, "time: not a JSON integer"},
	{"time exponent", `{"seq":0,"type":"x","time":1e3}`, "time: not a JSON integer"},
	{"time negative", `{"seq":0,"type":"x","time":-5}`, "time: negative integer"},
	{"time string", `{"seq":0,"type":"x","time":"5"}`, "time: not a JSON integer"},
	{"time array in an unpacked row", `{"seq":0,"type":"x","time":[1]}`, "time: not a JSON integer"},
	{"time overflows int64", `{"seq":0,"type":"x","time":99999999999999999999}`, "time: integer out of range"},
	{"type empty", `{"seq":0,"type":"","time":1}`, "type must be 1 to 128 characters, got 0"},
	{"type of 129 characters", `{"seq":0,"type":"` + strings.Repeat("t", 129) + `","time":1}`, "type must be 1 to 128 characters, got 129"},
	{"type with a space", `{"seq":0,"type":"tool call","time":1}`, "character outside"},
	{"type with a non-ASCII letter", `{"seq":0,"type":"caf\u00e9","time":1}`, "character outside"},
	{"type with raw UTF-8", `{"seq":0,"type":"café","time":1}`, "character outside"},
	{"type escaping a bad character", `{"seq":0,"type":"a\"b","time":1}`, "character outside"},
	{"type not a string", `{"seq":0,"type":5,"time":1}`, "type is not a string"},
	{"type bad escape", `{"seq":0,"type":"a\qb","time":1}`, "bad value"},
	{"data invalid JSON", `{"seq":0,"type":"x","time":1,"data":{x}}`, `bad value of "data"`},
	{"data unterminated", `{"seq":0,"type":"x","time":1,"data":[1,2}`, `bad value of "data"`},
	{"data bare word", `{"seq":0,"type":"x","time":1,"data":nope}`, `bad value of "data"`},
	{"data with invalid UTF-8", "{\"seq\":0,\"type\":\"x\",\"time\":1,\"data\":{\"text\":\"a\xff\xfeb\"}}", "invalid UTF-8 in string"},
	{"packed data with invalid UTF-8", "{\"seq\":0,\"type\":\"x\",\"n\":2,\"time\":[1,2],\"data\":[\"ok\",\"\xff\"]}", "invalid UTF-8 in string"},
	{"key with invalid UTF-8", "{\"seq\":0,\"type\":\"x\",\"time\":1,\"\xfe\":1}", "invalid UTF-8 in string"},
	{"key not a string", `{seq:0,"type":"x","time":1}`, "expected a key"},
	{"key with a bad escape", `{"s\q":0,"type":"x","time":1}`, "bad key"},
	{"missing colon", `{"seq" 0,"type":"x","time":1}`, "expected ':'"},
	{"trailing comma", `{"seq":0,"type":"x","time":1,}`, "expected a key"},
	{"unclosed object", `{"seq":0,"type":"x","time":1`, "expected ',' or '}'"},
	{"packed n=1", `{"seq":0,"type":"x","n":1,"time":[1],"data":[1]}`, "n is 1"},
	{"packed n=0", `{"seq":0,"type":"x","n":0,"time":[],"data":[]}`, "n is 0"},
	{"packed n negative", `{"seq":0,"type":"x","n":-2,"time":[1,2],"data":[1,2]}`, "n: negative integer"},
	{"packed n float", `{"seq":0,"type":"x","n":2.0,"time":[1,2],"data":[1,2]}`, "n: not a JSON integer"},
	{"packed n string", `{"seq":0,"type":"x","n":"2","time":[1,2],"data":[1,2]}`, "n: not a JSON integer"},
	{"packed n huge", `{"seq":0,"type":"x","n":1000000000000,"time":[1,2],"data":[1,2]}`, "n is 1000000000000"},
	{"packed n beyond int64", `{"seq":0,"type":"x","n":99999999999999999999,"time":[1,2],"data":[1,2]}`, "n: integer out of range"},
	{"packed time shorter than n", `{"seq":0,"type":"x","n":3,"time":[1,2],"data":[1,2,3]}`, "packed time has 2 elements, n is 3"},
	{"packed time longer than n", `{"seq":0,"type":"x","n":2,"time":[1,2,3],"data":[1,2]}`, "packed time: more elements than n"},
	{"packed time empty", `{"seq":0,"type":"x","n":2,"time":[],"data":[1,2]}`, "packed time has 0 elements, n is 2"},
	{"packed data shorter than n", `{"seq":0,"type":"x","n":3,"time":[1,2,3],"data":[1,2]}`, "packed data has 2 elements, n is 3"},
	{"packed data longer than n", `{"seq":0,"type":"x","n":2,"time":[1,2],"data":[1,2,3]}`, "packed data: more elements than n"},
	{"packed time scalar", `{"seq":0,"type":"x","n":2,"time":1,"data":[1,2]}`, "packed time: not an array"},
	{"packed data scalar", `{"seq":0,"type":"x","n":2,"time":[1,2],"data":{"a":1}}`, "packed data: not an array"},
	{"packed without data", `{"seq":0,"type":"x","n":2,"time":[1,2]}`, "packed row without data"},
	{"packed time float", `{"seq":0,"type":"x","n":2,"time":[1,2.5],"data":[1,2]}`, "packed time: not a JSON integer"},
	{"packed time negative", `{"seq":0,"type":"x","n":2,"time":[-1,2],"data":[1,2]}`, "packed time: negative integer"},
	{"packed seq out of range", `{"seq":4611686018427387905,"type":"x","n":2,"time":[1,2],"data":[1,2]}`, "seq out of range"},
	{"trailing garbage", `{"seq":0,"type":"x","time":1} x`, "unexpected bytes after the row object"},
	{"trailing brace", `{"seq":0,"type":"x","time":1}}`, "unexpected bytes after the row object"},
	{"two rows on a line", `{"seq":0,"type":"x","time":1}{"seq":1,"type":"x","time":1}`, "unexpected bytes after the row object"},
}

func TestDecodeRowCorrupt(t *testing.T) {
	for _, tt := range corruptRows {
		t.Run(tt.name, func(t *testing.T) {
			got, err := eventlog.DecodeRow([]byte(tt.line))
			require.ErrorIs(t, err, eventlog.ErrCorrupt)
			require.Contains(t, err.Error(), tt.reason)
			require.Nil(t, got)
		})
	}
}

// bigRow returns a valid row (without '\n') of exactly size bytes.
func bigRow(t testing.TB, seq int64, size int) []byte {
	t.Helper()
	e := ev(seq, "x", 1, `""`)
	pad := size - eventlog.RowSize(e)
	require.GreaterOrEqual(t, pad, 0)
	e.Data = []byte(`"` + strings.Repeat("a", pad) + `"`)
	line := eventlog.AppendCanon(nil, e)
	require.Len(t, line, size)
	return line
}

func TestDecodeRowSizeLimit(t *testing.T) {
	got, err := eventlog.DecodeRow(bigRow(t, 3, eventlog.MaxRowSize))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Len(t, got[0].Data, eventlog.MaxRowSize-eventlog.RowSize(ev(3, "x", 1, `""`))+2)

	_, err = eventlog.DecodeRow(bigRow(t, 3, eventlog.MaxRowSize+1))
	require.ErrorIs(t, err, eventlog.ErrCorrupt)
	require.Contains(t, err.Error(), "exceeds the limit of 16777216")
}

// A packed row's n is checked before anything is allocated for it.
func TestDecodeRowHugeNDoesNotAllocate(t *testing.T) {
	for _, n := range []string{"1000000000", "4611686018427387904", "9223372036854775807"} {
		t.Run(n, func(t *testing.T) {
			line := []byte(`{"seq":0,"type":"x","n":` + n + `,"time":[1,2],"data":[1,2]}`)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := eventlog.DecodeRow(line)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, eventlog.ErrCorrupt)
			require.Contains(t, err.Error(), "n is "+n)
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated")
		})
	}
}
