package projection

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// sameAsEncodingJSON decodes data into a T by decodeFields and by
// encoding/json (decode) and fails when decodeFields succeeds with a value
// or an outcome that differs; it returns whether decodeFields succeeded.
func sameAsEncodingJSON[T any, P checker[T]](t *testing.T, data []byte) bool {
	t.Helper()
	var fast, slow T
	fastOK := decodeFields(data, &fast)
	why := decode(data, P(&slow))
	if !fastOK || !json.Valid(data) {
		return false // encoding/json decides; invalid data: no panic is all that is asked
	}
	require.Empty(t, why, "decodeFields took %q, which encoding/json rejects", data)
	require.Equal(t, slow, fast, "data %q", data)
	return true
}

// decoders runs sameAsEncodingJSON for every data struct, by name.
var decoders = map[string]func(*testing.T, []byte) bool{
	"noData":            sameAsEncodingJSON[noData],
	"messageData":       sameAsEncodingJSON[messageData],
	"chunkData":         sameAsEncodingJSON[chunkData],
	"reasoningData":     sameAsEncodingJSON[reasoningData],
	"toolCallData":      sameAsEncodingJSON[toolCallData],
	"toolApprovalData":  sameAsEncodingJSON[toolApprovalData],
	"toolResultHead":    sameAsEncodingJSON[toolResultHead],
	"toolResultData":    sameAsEncodingJSON[toolResultData],
	"usageData":         sameAsEncodingJSON[usageData],
	"turnEndData":       sameAsEncodingJSON[turnEndData],
	"memorySetData":     sameAsEncodingJSON[memorySetData],
	"memoryDeleteData":  sameAsEncodingJSON[memoryDeleteData],
	"providerStateData": sameAsEncodingJSON[providerStateData],
	"slotSwitchData":    sameAsEncodingJSON[slotSwitchData],
	"compactedData":     sameAsEncodingJSON[compactedData],
	"planSetData":       sameAsEncodingJSON[planSetData],
}

// plainShapes are data of every type as writers produce it, each key of
// the struct present: decodeFields must take them (the fast path is the
// path) and give encoding/json's value.
var plainShapes = map[string]string{
	"noData":            `{"turn":3,"id":"turn_3","nested":{"a":[1,"}"]}}`,
	"messageData":       `{"id":"m1","text":"line one\nline \"two\"\tend \\ é 日本 😀","slot":"s1"}`,
	"chunkData":         `{"text":"fox jumps over "}`,
	"reasoningData":     `{"text":"think\r\n/\/\b\f","signature":"sig"}`,
	"toolCallData":      `{"id":"c1","name":"read_file","args":{"path":"x.go", "limit":200},"effect":"read"}`,
	"toolApprovalData":  `{"id":"c1","decision":"approved","by":"user"}`,
	"toolResultHead":    `{"id":"c1","output":"big \"quoted\" output","error":"boom","synthetic":true}`,
	"toolResultData":    `{"id":"c1","output":{"lines":["a","b"]},"error":"","synthetic":false}`,
	"usageData":         `{"inputTokens":1000,"outputTokens":-0,"cachedTokens":999999999999999999,"costMicros":-1234,"model":"model-a"}`,
	"turnEndData":       `{"kind":"completed","reason":"done","steps":3}`,
	"memorySetData":     `{"key":"k","value":[1,2,{"x":null}],"metadata":{"m":true}}`,
	"memoryDeleteData":  `{"key":"k"}`,
	"providerStateData": `{"provider":"p","state":"opaque"}`,
	"slotSwitchData":    `{"slot":"s2"}`,
	"compactedData":     `{"summary":"so far"}`,
	"planSetData":       `{"plan":null}`,
}

func TestFieldsPlainShapes(t *testing.T) {
	require.Len(t, plainShapes, len(decoders))
	for name, data := range plainShapes {
		t.Run(name, func(t *testing.T) {
			require.True(t, decoders[name](t, []byte(data)), "decodeFields gave %q up", data)
		})
	}
}

// unusual are data that decodeFields gives up on or must get exactly
// right: encoding/json's corner cases.
var unusual = []string{
	`{"text":"\u00e9\ud83d\ude00 \ud800 lone"}`,
	"{\"text\":\"\xff\xfe invalid\"}",
	`{"text":null}`, `{"text":1}`, `{"text":"a","text":"b"}`, `{"text":"a","text":null}`, `{"text":0,"text":"0"}`,
	`{"TEXT":"folded","text":"exact"}`, `{"t\u0065xt":"escaped key"}`,
	`{"slot":null,"text":"t"}`, `{"slot":"","text":""}`,
	`{"inputTokens":1e3,"outputTokens":1}`, `{"inputTokens":1.0,"outputTokens":1}`,
	`{"inputTokens":1234567890123456789,"outputTokens":1}`, `{"inputTokens":-9223372036854775808,"outputTokens":1}`,
	`{"inputTokens":"1","outputTokens":1}`, `{"inputTokens":1,"outputTokens":2,"cachedTokens":null}`,
	`{"synthetic":1,"id":"x"}`, `{"synthetic":null,"id":"x"}`, `{"id":"x","output":null}`,
	`{"args":null,"id":"a","name":"n"}`, `{"value":  "v"  ,"key":"k"}`,
	` { "id" : "c" , "decision" : "denied" } `,
	`{}`, `[]`, `[1]`, `"s"`, `1`, `true`, `null`, ``, `{"a":1,}`, `{"text":"unterminated}`,
}

// The fast path gives encoding/json's value wherever it answers.
func FuzzFieldsMatchEncodingJSON(f *testing.F) {
	for _, s := range plainShapes {
		f.Add([]byte(s))
	}
	for _, s := range unusual {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, same := range decoders {
			same(t, data)
		}
		sameChunkText(t, data)
	})
}

// sameChunkText checks appendChunkText, the transcript's way to a chunk's
// text, against read[chunkData], wherever it answers.
func sameChunkText(t *testing.T, data []byte) {
	t.Helper()
	prefix := []byte("so far: ")
	got, found, ok := appendChunkText(append([]byte(nil), prefix...), data)
	if !ok || !json.Valid(data) {
		return
	}
	d, why := read[chunkData](data)
	require.Empty(t, why, "appendChunkText took %q, which read rejects", data)
	require.Equal(t, d.Text != nil, found, "data %q", data)
	if found {
		require.Equal(t, string(prefix)+*d.Text, string(got), "data %q", data)
	} else {
		require.Equal(t, string(prefix), string(got), "data %q", data)
	}
}

func TestChunkTextPlainShapes(t *testing.T) {
	for _, data := range []string{`{"text":"fox jumps over "}`, `{"index":3,"text":"line\n\"quoted\" é"}`, `{"delta":{"args":"{}"}}`} {
		_, _, ok := appendChunkText(nil, []byte(data))
		require.True(t, ok, "appendChunkText gave %q up", data)
		sameChunkText(t, []byte(data))
	}
}
