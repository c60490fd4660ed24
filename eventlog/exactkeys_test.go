package eventlog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

func TestExactKeys(t *testing.T) {
	known := []string{"id", "effect", "inputTokens"}
	tests := []struct {
		name, in, want string // want "": in itself
	}{
		{"exact keys only", `{"id":"a","effect":"write"}`, ""},
		{"unknown keys that fold to nothing known", `{"id":"a","other":1,"Else":[{"EFFECT":1}]}`, ""},
		{"a key in another case", `{"id":"a","effect":"write","EFFECT":"read"}`, `{"id":"a","effect":"write"}`},
		{"camel case in another case", `{"inputtokens":5,"inputTokens":1}`, `{"inputTokens":1}`},
		{"Kelvin sign folds to k", `{"id":"a","effect":"w","effect\u212a":1,"ID":"b"}`, `{"id":"a","effect":"w"}`},
		{"escaped key", `{"\u0069d":"a","I\u0044":"b"}`, `{"\u0069d":"a"}`},
		{"whitespace kept inside members", ` { "id" : "a" , "Id" : 1 } `, `{"id" : "a"}`},
		{"only foreign keys", `{"ID":"x"}`, `{}`},
		{"empty object", `{}`, ""},
		{"not an object", `[1,2]`, ""},
		{"null", `null`, ""},
		{"broken", `{"id":`, ""},
		{"trailing comma", `{"id":1,}`, ""},
		{"trailing bytes stay an error", `{"00":10,"Id":0}00`, ""},
		{"invalid value stays an error", `{"ID":[1,,2],"id":1}`, ""},
		{"escaped quote in a value", `{"x":"a\"}","ID":1,"id":2}`, `{"id":2}`},
		{"escaped backslash before a quote", `{"x":"a\\","ID":1,"id":2}`, `{"id":2}`},
		{"brackets in strings", `{"x":{"s":"}]","t":["{"]},"ID":1,"id":[{"a":"]"}]}`, `{"id":[{"a":"]"}]}`},
		{"literals and numbers", `{"x":true,"y":null,"z":-1.5e3,"ID":false,"id":0}`, `{"id":0}`},
		// encoding/json decodes text that is not UTF-8 (as U+FFFD): it is
		// filtered as encoding/json reads it (regression: the folded key got through).
		{"a key that is not UTF-8 beside a folded one", "{\"\xf5\":0,\"ID\":0}", "{}"},
		{"a value that is not UTF-8, exact keys", "{\"id\":\"\xff\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eventlog.ExactKeys([]byte(tt.in), known...)
			want := tt.want
			if want == "" {
				want = tt.in
			}
			require.Equal(t, want, string(got))
			if json.Valid([]byte(tt.in)) {
				require.True(t, json.Valid(got))
			}
		})
	}
}

// Checkpoint and rollback data keys are exact: a key in another case is an
// unknown key, ignored (encoding/json alone would take it).
func TestReservedKeysAreExact(t *testing.T) {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	cp, err := eventlog.ParseCheckpoint(json.RawMessage(`{"log":"` + d1 + `","LOG":"` + d2 + `","Label":"x","state":{"projection":"agent/v1","digest":"` + d1 + `","Digest":"` + d2 + `"}}`))
	require.NoError(t, err)
	require.Equal(t, eventlog.CheckpointData{Log: d1, State: &eventlog.StateRef{Projection: "agent/v1", Digest: d1}}, cp)
	_, err = eventlog.ParseCheckpoint(json.RawMessage(`{"LOG":"` + d1 + `"}`))
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent, "no log digest")

	rb, err := eventlog.ParseRollback(json.RawMessage(`{"to":2,"TO":5,"Reason":"r"}`))
	require.NoError(t, err)
	require.Equal(t, eventlog.RollbackData{To: 2}, rb)
	_, err = eventlog.ParseRollback(json.RawMessage(`{"To":2}`))
	require.ErrorIs(t, err, eventlog.ErrInvalidEvent, "no to")
}

// FuzzExactKeys: the result is data itself, or — when data held a key that
// folds onto a known key without being it — a valid object holding exactly
// data's members with known keys, so encoding/json reads the known keys
// from it as they are in data and nothing else.
func FuzzExactKeys(f *testing.F) {
	for _, s := range []string{`{"id":"a","ID":"b"}`, `{"effect":1,"EFFECT":2,"x":{"Id":3}}`, `{}`, `[]`, `{"id":`,
		`{"\u0069d":1,"I\u0044":2}`, ` { "id" : 1 , "Id" : [1,{"a":2}] } `, `{"idſ":1}`} {
		f.Add([]byte(s))
	}
	known := []string{"id", "effect", "inputTokens"}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		got := eventlog.ExactKeys(data, known...)
		require.True(t, bytes.Equal(in, data), "input unchanged")
		if string(got) == string(data) {
			return
		}
		require.True(t, json.Valid(got), "%q", got)
		var all, kept map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &all), "only a valid object is filtered")
		require.NoError(t, json.Unmarshal(got, &kept))
		want := map[string]json.RawMessage{}
		for _, k := range known {
			if v, ok := all[k]; ok {
				want[k] = v
			}
		}
		require.Equal(t, len(want), len(kept))
		for k, v := range want {
			require.JSONEq(t, string(v), string(kept[k]), k)
		}
	})
}

// The common case — no key in another case — allocates nothing: ExactKeys
// runs on every event a projection reads.
func TestExactKeysCommonCaseAllocatesNothing(t *testing.T) {
	data := []byte(`{"id":"c1","name":"read_file","args":{"path":"a.go","Deep":[1,"x\"y"]},"effect":"read","Other":"Text"}`)
	known := []string{"id", "name", "args", "effect"}
	allocs := testing.AllocsPerRun(100, func() { eventlog.ExactKeys(data, known...) })
	require.Zero(t, allocs)
}
