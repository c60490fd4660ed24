package eventlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ExactKeys returns data, a JSON object, with its members whose key is not
// exactly one of known dropped — when it has a member that encoding/json
// would take for a known key though it is not one (encoding/json matches
// keys regardless of case: it reads "EFFECT" as "effect", where the format's keys
// are exact and an unknown key is ignored). Otherwise, and for data that
// is not a well-formed object, it returns data itself, so the common case
// costs one scan and no copy. Only the top level is looked at.
//
// Data that is not valid UTF-8 is one case where encoding/json and this
// package disagree: encoding/json decodes it (each bad byte as U+FFFD), the
// scan here refuses it. Such data is filtered as the text encoding/json
// reads (bad bytes replaced), so that a folded key never gets through
// beside a bad one (FuzzParseRollback found {"\xf5":0,"tO":0} read as a
// rollback to 0).
func ExactKeys(data []byte, known ...string) []byte {
	foreign := false
	scan := func(data []byte) bool {
		return eachMember(data, func(raw []byte, escaped bool, _, _ int) {
			if !foreign && keyOf(raw, escaped, known) == foldsOnly {
				foreign = true
			}
		})
	}
	orig := data
	ok := scan(data)
	if !ok && !utf8.Valid(data) && json.Valid(data) {
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
		ok = scan(data)
	}
	if !ok || !foreign || !json.Valid(data) {
		return orig // invalid data keeps its error: nothing is filtered away
	}
	out := []byte{'{'}
	eachMember(data, func(raw []byte, escaped bool, start, end int) {
		if keyOf(raw, escaped, known) == exact {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, data[start:end]...)
		}
	})
	return append(out, '}')
}

// How a key compares with the known keys.
const (
	unknown   = iota
	exact     // it is one
	foldsOnly // encoding/json would take it for one, but it is not
)

// keyOf classifies the raw bytes of a key (between its quotes). It does
// not allocate for a key without escapes and non-ASCII bytes.
func keyOf(raw []byte, escaped bool, known []string) int {
	if escaped {
		var key string
		if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key) != nil {
			return unknown
		}
		raw = []byte(key)
	}
	ascii := true
	for _, c := range raw {
		ascii = ascii && c < utf8.RuneSelf
	}
	class := unknown
	for _, k := range known {
		switch {
		case k == string(raw):
			return exact
		case ascii && len(k) == len(raw) && asciiEqualFold(k, raw),
			!ascii && strings.EqualFold(k, string(raw)):
			class = foldsOnly
		}
	}
	return class
}

// asciiEqualFold reports whether k and b are equal but for the case of
// ASCII letters.
func asciiEqualFold(k string, b []byte) bool {
	for i := range len(k) {
		x, y := k[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// eachMember calls fn for every member of the JSON object data, with its
// key's raw bytes (between the quotes), whether they hold an escape, and
// where the member starts and ends; it returns false when data is not a
// well-formed object as far as it looks (keys and structure; values are
// skipped, not validated) or has bytes after it.
func eachMember(data []byte, fn func(raw []byte, escaped bool, start, end int)) bool {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipWS(data, i+1) == len(data)
	}
	for {
		start := i
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end, escaped, err := scanString(data, i)
		if err != nil {
			return false
		}
		raw := data[i+1 : end-1]
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		var ok bool
		if i, ok = skipValue(data, skipWS(data, i+1)); !ok {
			return false
		}
		fn(raw, escaped, start, i)
		i = skipWS(data, i)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
			continue
		}
		if i >= len(data) || data[i] != '}' {
			return false
		}
		return skipWS(data, i+1) == len(data)
	}
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
