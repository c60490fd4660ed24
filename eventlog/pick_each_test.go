package eventlog_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// EachMember yields, for a valid JSON object, every member in order: its
// key as encoding/json reads it and its value's bytes exactly as written.
func FuzzEachMember(f *testing.F) {
	for _, s := range pickSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(" {\t\"a\" :\n[ 1 , {\"b\":\"\\\"}\"} ] ,\"\\\\\":\"x\\\\\" , \"n\" : -1.5e3 }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		type member struct {
			key   string
			value string
		}
		var got []member
		ok := eventlog.EachMember(data, func(key []byte, escaped bool, value []byte) {
			require.Equal(t, bytes.IndexByte(key, '\\') >= 0, escaped, "escaped, key %q", key)
			k := string(key)
			if escaped {
				_ = json.Unmarshal([]byte(`"`+k+`"`), &k)
			}
			got = append(got, member{k, string(value)})
		})
		if !json.Valid(data) || !utf8.Valid(data) {
			return // no panic is all that is asked
		}
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			require.False(t, ok, "not an object")
			return
		}
		require.True(t, ok, "a valid object")
		var want []member
		dec := json.NewDecoder(bytes.NewReader(data))
		_, _ = dec.Token()
		for dec.More() {
			tok, err := dec.Token()
			require.NoError(t, err)
			var v json.RawMessage
			require.NoError(t, dec.Decode(&v))
			want = append(want, member{tok.(string), string(v)})
		}
		require.Equal(t, want, got)
	})
}
