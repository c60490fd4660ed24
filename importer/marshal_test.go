package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refMarshal is Marshal as it was when encoding/json wrote an Obj, and
// compacted what each Obj's MarshalJSON returned again at every level
// around it: FuzzMarshal holds the one that writes member by member to
// the same bytes.
func refMarshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	if raw, ok := v.(json.RawMessage); ok {
		if len(bytes.TrimSpace(raw)) == 0 {
			return json.RawMessage("null"), nil
		}
		if err := json.Compact(&b, raw); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(refObj(v)); err != nil {
		return nil, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, bytes.TrimSuffix(b.Bytes(), []byte("\n"))); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// refObj2 is an Obj whose MarshalJSON is the one refMarshal's encoder
// called; refObj turns an Obj, or those of a []Obj, into one.
type refObj2 Obj

func refObj(v any) any {
	switch x := v.(type) {
	case Obj:
		return refObj2(x)
	case []Obj:
		out := make([]any, len(x))
		for i, o := range x {
			out[i] = refObj2(o)
		}
		return out
	}
	return v
}

func (o refObj2) MarshalJSON() ([]byte, error) {
	if len(o)%2 != 0 {
		return nil, fmt.Errorf("importer: Obj with %d elements, want key-value pairs", len(o))
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i := 0; i < len(o); i += 2 {
		if _, ok := o[i].(string); !ok {
			return nil, fmt.Errorf("importer: Obj key %v is not a string", o[i])
		}
		if isNil(o[i+1]) {
			continue
		}
		val, err := refMarshal(o[i+1])
		if err != nil {
			return nil, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		k, _ := refMarshal(o[i])
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// FuzzMarshal: Marshal writes what refMarshal wrote, for objects that
// nest the input as raw JSON and as text, alone and in arrays; where
// refMarshal failed only for the depth of what it re-read whole, Marshal
// may succeed (the event's own check refuses the data then).
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2, {"b" : "c<>&\u2028"}]}`, ` "x" `, `[]`, `{`, "\"\xff\"", `null`, ``,
		strings.Repeat("[", 9998) + strings.Repeat("]", 9998)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		raw := json.RawMessage(in)
		for _, v := range []any{
			raw,
			string(in),
			Obj{"a", raw},
			Obj{"line", int64(3), "record", raw, "empty", nil, "text", string(in), "ok", true},
			Obj{"source", Obj{"line", int64(1), "record", raw}, "parts", []Obj{{"x", raw}, {"y", string(in)}}},
			Obj{"odd"},
			Obj{1, "not a key"},
		} {
			got, err := Marshal(v)
			want, refErr := refMarshal(v)
			if refErr == nil {
				require.NoError(t, err, "%q", in)
				require.Equal(t, string(want), string(got), "%q", in)
				continue
			}
			if err == nil {
				require.Contains(t, refErr.Error(), "exceeded max depth", "refused before, taken now")
			}
		}
	})
}
