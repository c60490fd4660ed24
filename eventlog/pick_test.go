package eventlog_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

var pickSeeds = []string{
	`{"id":"c1","output":"big","error":"e"}`,
	`{"output":"big","id":"c1"}`,
	` { "id" : "c1" , "x" : [1,{"id":2}] , "synthetic" : true } `,
	`{"ID":"folded","id":"exact"}`,
	`{"id":"a","id":"b"}`,
	`{"i\u0064":"escaped key"}`,
	`{}`,
	`{"x":1}`,
	`[1,2]`,
	`"text"`,
	`{"id":"unterminated}`,
	`{"id":1,}`,
	`null`,
}

// Pick keeps exactly the members of the known keys; for valid JSON the
// result decodes to what the original decodes to for those keys, and
// Member returns the value encoding/json gives a key (the last one).
func FuzzPick(f *testing.F) {
	for _, s := range pickSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		known := []string{"id", "output", "synthetic"}
		picked, ok := eventlog.Pick(data, known...)
		if !ok {
			require.Equal(t, data, picked, "not an object: data itself")
		}
		value, found := eventlog.Member(data, "id")
		if !json.Valid(data) || !utf8.Valid(data) {
			// encoding/json takes invalid UTF-8 (RFC 8259 does not; a log
			// never holds it): no panic is all that is asked.
			return
		}
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			require.False(t, ok, "not an object")
			return
		}
		require.True(t, ok, "a valid object")
		require.True(t, json.Valid(picked), "picked %q from %q", picked, data)
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(picked, &got))
		want := map[string]json.RawMessage{}
		// exact keys only: re-decode keeping the last value of each exact key
		dec := json.NewDecoder(bytes.NewReader(data))
		_, _ = dec.Token()
		for dec.More() {
			tok, _ := dec.Token()
			var v json.RawMessage
			require.NoError(t, dec.Decode(&v))
			for _, k := range known {
				if tok.(string) == k {
					want[k] = v
				}
			}
		}
		require.Equal(t, len(want), len(got))
		for k, v := range want {
			require.JSONEq(t, string(v), string(got[k]), "key %s", k)
		}
		if v, ok := want["id"]; ok {
			require.True(t, found)
			require.JSONEq(t, string(v), string(value))
		} else {
			require.False(t, found)
		}
	})
}

func TestPick(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"id":"c1","output":"big"}`, `{"id":"c1"}`},
		{`{"output":"big","id":"c1","error":"e"}`, `{"id":"c1","error":"e"}`},
		{`{"id":"c1","error":"e"}`, `{"id":"c1","error":"e"}`},
		{`{"ID":"x","id":"y"}`, `{"id":"y"}`},
		{`{"x":1}`, `{}`},
	} {
		got, ok := eventlog.Pick([]byte(tc.in), "id", "error")
		require.True(t, ok)
		require.Equal(t, tc.want, string(got), tc.in)
	}
	same := []byte(`{"id":"c1","error":"e"}`)
	got, _ := eventlog.Pick(same, "id", "error")
	require.Same(t, &same[0], &got[0], "nothing dropped: no copy")
}
