package redact

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

func ghToken(seed uint32) string { return "ghp_" + fill(36, csAlnum, seed) }

const ghMarker = "[REDACTED:github-token]"

// TestDataRewrites checks what Data writes, byte for byte: only the raw
// bytes of each secret change, escapes around them are kept as written,
// whitespace too, and the record lists each redacted string once.
func TestDataRewrites(t *testing.T) {
	tok := ghToken(1)
	// The token with its first byte written as an escape.
	escTok := `\u0067` + tok[1:]
	tests := []struct {
		name, in, want string
	}{
		{"plain value", `{"output":"token ` + tok + ` end"}`,
			`{"output":"token ` + ghMarker + ` end","$redacted":[{"path":["output"],"kinds":["github-token"]}]}`},
		{"escapes around it kept", `{"output":"a\n` + tok + `\t\u00e9\/"}`,
			`{"output":"a\n` + ghMarker + `\t\u00e9\/","$redacted":[{"path":["output"],"kinds":["github-token"]}]}`},
		{"an escape inside it", `{"output":"x ` + escTok + ` y"}`,
			`{"output":"x ` + ghMarker + ` y","$redacted":[{"path":["output"],"kinds":["github-token"]}]}`},
		{"nested path", `{"args":{"env":["A=1","GH=` + tok + `"]}}`,
			`{"args":{"env":["A=1","GH=` + ghMarker + `"]},"$redacted":[{"path":["args","env",1],"kinds":["github-token"]}]}`},
		{"a key", `{"tokens":{"` + tok + `":true}}`,
			`{"tokens":{"` + ghMarker + `":true},"$redacted":[{"path":["tokens","` + ghMarker + `"],"key":true,"kinds":["github-token"]}]}`},
		{"two kinds in one string", `{"s":"` + tok + ` AKIA` + fill(16, csB32, 2) + `"}`,
			`{"s":"` + ghMarker + ` [REDACTED:aws-access-key-id]","$redacted":[{"path":["s"],"kinds":["aws-access-key-id","github-token"]}]}`},
		{"whitespace kept", "{ \"a\" : [ 1 , \"" + tok + "\" ] }\n",
			"{ \"a\" : [ 1 , \"" + ghMarker + "\" ] ,\"$redacted\":[{\"path\":[\"a\",1],\"kinds\":[\"github-token\"]}]}\n"},
		{"a string, not an object", `"` + tok + `"`, `"` + ghMarker + `"`},
		{"an array", `["x","` + tok + `"]`, `["x","` + ghMarker + `"]`},
		{"an existing record array is extended", `{"$redacted":[{"path":["a"],"kinds":["jwt"]}],"b":"` + tok + `"}`,
			`{"$redacted":[{"path":["a"],"kinds":["jwt"]},{"path":["b"],"kinds":["github-token"]}],"b":"` + ghMarker + `"}`},
		{"an empty record array", `{"$redacted":[],"b":"` + tok + `"}`,
			`{"$redacted":[{"path":["b"],"kinds":["github-token"]}],"b":"` + ghMarker + `"}`},
		{"a record of another type is replaced", `{"$redacted":"mine","b":"` + tok + `"}`,
			`{"$redacted":[{"path":["b"],"kinds":["github-token"]}],"b":"` + ghMarker + `"}`},
		{"a secret in the record itself", `{"b":"` + tok + `","$redacted":["` + tok + `"]}`,
			`{"b":"` + ghMarker + `","$redacted":["` + ghMarker + `",{"path":["b"],"kinds":["github-token"]},{"path":["$redacted",0],"kinds":["github-token"]}]}`},
	}
	r := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := r.Data([]byte(tc.in))
			require.True(t, changed)
			require.Equal(t, tc.want, string(out))
			require.True(t, json.Valid(out))
			again, changed := r.Data(out)
			require.False(t, changed, "redacting twice changed %s", again)
		})
	}
}

// TestDataLeavesAlone: data without secrets, and data that is not valid
// JSON, come back as they were (the same slice).
func TestDataLeavesAlone(t *testing.T) {
	r := New()
	for _, in := range []string{
		`{"text":"hello"}`, `null`, `42`, `{}`, `[]`, ``,
		`{"output":"package a\n\nfunc A() {}\n"}`,
		`{"bad":"` + ghToken(3) + `"`, // not closed: validation refuses it
		`{"bad":` + ghToken(3) + `}`,  // not a string
	} {
		data := []byte(in)
		out, changed := r.Data(data)
		require.False(t, changed, in)
		require.Equal(t, in, string(out))
		if len(data) > 0 {
			require.Same(t, &data[0], &out[0])
		}
	}
}

func TestFields(t *testing.T) {
	out, _ := New().Data([]byte(`{"a/b":{"c~d":["` + ghToken(4) + `"]},"` + ghToken(5) + `":1}`))
	fields, err := Fields(out)
	require.NoError(t, err)
	require.Equal(t, []Field{
		{Path: []string{"a/b", "c~d", "0"}, Kinds: []string{"github-token"}},
		{Path: []string{ghMarker}, Key: true, Kinds: []string{"github-token"}},
	}, fields)
	require.Equal(t, "/a~1b/c~0d/0", fields[0].Pointer())

	none, err := Fields([]byte(`{"text":"x"}`))
	require.NoError(t, err)
	require.Nil(t, none)
	_, err = Fields([]byte(`{"$redacted":"x"}`))
	require.Error(t, err)
}

func TestEvents(t *testing.T) {
	plain := json.RawMessage(`{"text":"hi"}`)
	batch := []eventlog.Event{
		{Type: "user/message", Data: plain},
		{Type: "tool/result", Data: json.RawMessage(`{"id":"c1","output":"` + ghToken(6) + `"}`)},
		{Type: "step/start"},
	}
	require.Equal(t, 1, New().Events(batch))
	require.Same(t, &plain[0], &batch[0].Data[0])
	require.JSONEq(t, `{"id":"c1","output":"`+ghMarker+`","$redacted":[{"path":["output"],"kinds":["github-token"]}]}`, string(batch[1].Data))
	require.Nil(t, batch[2].Data)
	// What a writer stores next: the redacted event passes validation.
	_, err := eventlog.Storable(batch[1])
	require.NoError(t, err)
}

// TestReservedEventsStayValid: a checkpoint or rollback whose label holds
// a secret is redacted and still parses.
func TestReservedEventsStayValid(t *testing.T) {
	r := New()
	cp, changed := r.Data([]byte(`{"log":"sha256:` + fill(64, csHex, 7) + `","label":"` + ghToken(8) + `"}`))
	require.True(t, changed)
	c, err := eventlog.ParseCheckpoint(cp)
	require.NoError(t, err)
	require.Equal(t, ghMarker, c.Label)
	rb, changed := r.Data([]byte(`{"to":3,"reason":"leaked ` + ghToken(9) + `"}`))
	require.True(t, changed)
	_, err = eventlog.ParseRollback(rb)
	require.NoError(t, err)
}

func TestWithPattern(t *testing.T) {
	r := New(WithPattern("internal-id", regexp.MustCompile(`ACME-[0-9]{6}`)))
	out, changed := r.Data([]byte(`{"t":"see ACME-123456 and ` + ghToken(10) + `"}`))
	require.True(t, changed)
	require.Equal(t, `{"t":"see [REDACTED:internal-id] and `+ghMarker+`","$redacted":[{"path":["t"],"kinds":["github-token","internal-id"]}]}`, string(out))
	// A pattern that matches markers does not grow them.
	greedy := New(WithPattern("any", regexp.MustCompile(`\[[A-Z]+:[a-z-]+\]`)))
	again, changed := greedy.Data(out)
	require.False(t, changed, string(again))
	require.NoError(t, ValidKind("internal-id"))
	require.Error(t, ValidKind("Bad Kind"))
}

// TestNoAllocationWhenClean: the fast path allocates nothing, for plain
// strings and for strings with escapes.
func TestNoAllocationWhenClean(t *testing.T) {
	r := New()
	data := []byte(`{"id":"c1","output":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\") // user@example.com; x = y\n}\n","name":"read_file"}`)
	r.Data(data) // fill the scratch pool
	allocs := testing.AllocsPerRun(100, func() { r.Data(data) })
	require.Zero(t, allocs)
}

func TestHardEscapes(t *testing.T) {
	for in, want := range map[string]bool{
		``: false, `abc`: false, `a\nb\tc\"d\\e`: false,
		`\u0041`: true, `x\/y`: true, `12345678\u`: true, `1234567\u0041`: true,
		`123456\/`: true, `1234567\n1234567\n`: false, `uuuuuuuu////////`: false,
	} {
		require.Equal(t, want, hardEscapes([]byte(in)), in)
	}
}
