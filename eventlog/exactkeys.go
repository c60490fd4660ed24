package eventlog

import (
	"bytes"
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
		var ok bool
		if i, ok = skipValue(data, skipWS(data, i+1)); !ok {
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
	if !foreign || !json.Valid(data) {
		return data // invalid data keeps its error: nothing is filtered away
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

// skipValue returns the index just past the JSON value at data[i], and
// false when the data ends first. It does not validate: strings are
// skipped to their closing quote, containers by depth, so a long tool
// output costs a memchr, not a scan; ExactKeys validates what it filters.
func skipValue(data []byte, i int) (int, bool) {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(data[j:], '"')
				if k < 0 {
					return len(data), false
				}
				j += k
				n := 0 // backslashes right before the quote
				for m := j - 1; m > i && data[m] == '\\'; m-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j + 1
			if depth == 0 {
				return i, true
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
			if depth <= 0 {
				return i, depth == 0
			}
		default:
			if depth == 0 { // a number or a literal
				j := i
				for j < len(data) && !strings.ContainsRune(",}] \t\r\n", rune(data[j])) {
					j++
				}
				return j, j > i
			}
			i++
		}
	}
	return i, false
}
