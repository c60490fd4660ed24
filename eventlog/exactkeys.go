package eventlog

import (
	"encoding/json"
	"strings"
)

// ExactKeys returns data, a JSON object, with its members whose key is not
// exactly one of known dropped — when it has a member that encoding/json
// would take for a known key though it is not one (encoding/json matches
// keys regardless of case: it reads "EFFECT" as "effect", where SPEC keys
// are exact and an unknown key is ignored). Otherwise, and for data that
// is not a well-formed object, it returns data itself, so the common case
// costs one scan and no copy. Only the top level is looked at.
func ExactKeys(data []byte, known ...string) []byte {
	type member struct{ start, end int }
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return data
	}
	var members []member
	foreign := false
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return data
	}
	for {
		start := i
		if i >= len(data) || data[i] != '"' {
			return data
		}
		end, escaped, err := scanString(data, i)
		if err != nil {
			return data
		}
		key := string(data[i+1 : end-1])
		if escaped && json.Unmarshal(data[i:end], &key) != nil {
			return data
		}
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return data
		}
		if i, _, err = scanValue(data, skipWS(data, i+1)); err != nil {
			return data
		}
		exact, folds := false, false
		for _, k := range known {
			exact = exact || k == key
			folds = folds || strings.EqualFold(k, key)
		}
		if exact {
			members = append(members, member{start, i})
		} else if folds {
			foreign = true
		}
		i = skipWS(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
			continue
		}
		if i >= len(data) || data[i] != '}' {
			return data
		}
		break
	}
	if skipWS(data, i+1) != len(data) {
		return data // trailing bytes: not an object, and its error must stay
	}
	if !foreign {
		return data
	}
	out := []byte{'{'}
	for n, m := range members {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, data[m.start:m.end]...)
	}
	return append(out, '}')
}
