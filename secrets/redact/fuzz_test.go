package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzData: on any input Data does not panic; on valid JSON its output is
// valid JSON, redacting it again changes nothing, and nothing but matched
// spans changes: the two token streams are the same but for the record
// member, and each changed string is the input's with some non-empty
// spans replaced by markers.
func FuzzData(f *testing.F) {
	for _, c := range detectorCases() {
		data, _ := json.Marshal(map[string]string{"output": c.before + c.secret + c.after})
		f.Add(data)
		miss, _ := json.Marshal(map[string]string{"output": c.nearMiss})
		f.Add(miss)
	}
	f.Add([]byte(`{"a":"x\u0067hp_` + fill(36, csAlnum, 1) + `"}`))
	f.Add([]byte(`["` + ghToken(2) + `",{"` + ghToken(3) + `":null}]`))
	f.Add([]byte(`{"$redacted":[],"b":"` + ghToken(4) + `"}`))
	f.Add([]byte(`"postgres://u:p@h"`))
	r := New()
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		out, changed := r.Data(in)
		require.Equal(t, orig, in, "the input was modified")
		if !changed {
			require.Equal(t, in, out)
			return
		}
		require.True(t, json.Valid(in), "invalid input changed")
		require.True(t, json.Valid(out), "output is not valid JSON: %s", out)
		again, changed := r.Data(out)
		require.False(t, changed, "not idempotent:\n%s\n%s", out, again)
		if !bytes.Contains(in, []byte(RecordKey)) {
			sameButSpans(t, in, out)
		}
	})
}

// sameButSpans checks that out is in with markers in place of spans of
// its strings, plus a top-level record member.
func sameButSpans(t *testing.T, in, out []byte) {
	a, b := tokens(t, in), tokens(t, out)
	b = dropRecord(b)
	require.Equal(t, len(a), len(b), "token counts differ:\n%s\n%s", in, out)
	for i := range a {
		sa, oka := a[i].(string)
		sb, okb := b[i].(string)
		if oka && okb {
			require.True(t, markedFrom(sa, sb), "%q is not %q with markers", sb, sa)
			continue
		}
		require.Equal(t, a[i], b[i])
	}
}

func tokens(t *testing.T, data []byte) []json.Token {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []json.Token
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, tok)
	}
}

// dropRecord removes the top-level "$redacted" member's tokens.
func dropRecord(toks []json.Token) []json.Token {
	if len(toks) == 0 || toks[0] != json.Delim('{') {
		return toks
	}
	depth := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case json.Delim('{'), json.Delim('['):
			depth++
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			continue
		}
		if depth == 1 && toks[i] == RecordKey {
			j, d := i+1, 0
			for {
				switch toks[j] {
				case json.Delim('{'), json.Delim('['):
					d++
				case json.Delim('}'), json.Delim(']'):
					d--
				}
				j++
				if d == 0 {
					break
				}
			}
			return append(toks[:i:i], toks[j:]...)
		}
	}
	return toks
}

// markedFrom reports whether got is orig with zero or more non-empty
// spans replaced by markers: got's text between markers must be found in
// orig in order, each marker standing for at least one byte (leftmost
// matching is exact for such patterns).
func markedFrom(orig, got string) bool {
	var pieces []string
	for {
		i := strings.Index(got, "[REDACTED:")
		if i < 0 {
			pieces = append(pieces, got)
			break
		}
		e := strings.IndexByte(got[i:], ']') + i + 1
		pieces = append(pieces, got[:i])
		got = got[e:]
	}
	if len(pieces) == 1 {
		return orig == pieces[0]
	}
	last := pieces[len(pieces)-1]
	if !strings.HasPrefix(orig, pieces[0]) || !strings.HasSuffix(orig, last) || len(orig) < len(pieces[0])+len(last) {
		return false
	}
	rest := orig[len(pieces[0]) : len(orig)-len(last)]
	for _, p := range pieces[1 : len(pieces)-1] {
		if len(rest) < 1 {
			return false
		}
		k := strings.Index(rest[1:], p)
		if k < 0 {
			return false
		}
		rest = rest[1+k+len(p):]
	}
	return len(rest) >= 1
}

// FuzzEscapes: a string is redacted the same whether its JSON escapes
// only what must be escaped (scanned raw, text.esc) or every character
// (\u escapes: decoded first).
func FuzzEscapes(f *testing.F) {
	for _, c := range detectorCases() {
		f.Add(c.before + c.secret + c.after)
		f.Add(c.nearMiss)
	}
	f.Add("a\n" + ghToken(1) + "\t\"x\" Server=h;Password=p\\q;")
	r := New()
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		var soft bytes.Buffer
		enc := json.NewEncoder(&soft)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		hard := []byte{'"'}
		for _, c := range utf16.Encode([]rune(s)) {
			hard = fmt.Appendf(hard, "\\u%04x", c)
		}
		hard = append(hard, '"')
		a, _ := r.Data(bytes.TrimSpace(soft.Bytes()))
		b, _ := r.Data(hard)
		var sa, sb string
		require.NoError(t, json.Unmarshal(a, &sa))
		require.NoError(t, json.Unmarshal(b, &sb))
		require.Equal(t, sb, sa, "soft %s\nhard %s", a, b)
	})
}
