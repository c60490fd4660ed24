package chatview

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Redaction is one string of an event's data that redaction at write
// changed (an entry of its redaction record, docs/format.md §11): where it
// is, as a person reads it, and the kinds of the secrets replaced in it.
type Redaction struct {
	// Where is the string's path from the event's data: keys joined by
	// dots, array indices in brackets, a key that is no plain word quoted
	// (output, args.env[2], args["my key"]); a redacted key is "a key in"
	// the object that holds it ("a key" at the top).
	Where string
	// Kinds are the kinds of secrets replaced in it, sorted, each once.
	Kinds []string
}

// Redactions are what redaction at write changed in the events a Block
// stands for, each place once, in the order the records list them.
type Redactions []Redaction

// Words says them as a short note: "redacted: output (aws-access-key-id)";
// places with the same kinds share them ("redacted: output, error
// (github-token); args.key (jwt)"). It is "" for none.
func (rs Redactions) Words() string {
	if len(rs) == 0 {
		return ""
	}
	type group struct {
		where []string
		kinds []string
	}
	var groups []group
next:
	for _, r := range rs {
		for i := range groups {
			if slices.Equal(groups[i].kinds, r.Kinds) {
				groups[i].where = append(groups[i].where, r.Where)
				continue next
			}
		}
		groups = append(groups, group{[]string{r.Where}, r.Kinds})
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(g.where, ", ") + " (" + strings.Join(g.kinds, ", ") + ")"
	}
	return "redacted: " + strings.Join(parts, "; ")
}

// merge adds more to rs: a place already there gains the new kinds.
func (rs Redactions) merge(more Redactions) Redactions {
	for _, m := range more {
		i := slices.IndexFunc(rs, func(r Redaction) bool { return r.Where == m.Where })
		if i < 0 {
			rs = append(rs, Redaction{Where: m.Where, Kinds: slices.Clone(m.Kinds)})
			continue
		}
		kinds := append(slices.Clone(rs[i].Kinds), m.Kinds...)
		slices.Sort(kinds)
		rs[i].Kinds = slices.Compact(kinds)
	}
	return rs
}

// recordMarker is what data holding a redaction record contains: most
// data holds none, and is passed over at the cost of a byte search.
var recordMarker = []byte(`"` + redact.RecordKey + `"`)

// redactions reads the redaction record of data and returns it in words,
// with data without the record's member (the content it is about). Data
// with no record, or with a member of that name that is no record (a
// writer's own), is returned as is, with no Redactions.
func redactions(data json.RawMessage) (Redactions, json.RawMessage) {
	if !bytes.Contains(data, recordMarker) {
		return nil, data
	}
	fields, err := redact.Fields(data)
	if err != nil || len(fields) == 0 {
		return nil, data
	}
	var rs Redactions
	for _, f := range fields {
		kinds := slices.Clone(f.Kinds)
		slices.Sort(kinds)
		rs = rs.merge(Redactions{{Where: where(data, f), Kinds: slices.Compact(kinds)}})
	}
	return rs, withoutRecord(data)
}

// withoutRecord is the object data without its top-level RecordKey
// member, compacted between the members it keeps.
func withoutRecord(data json.RawMessage) json.RawMessage {
	out := []byte{'{'}
	eventlog.EachMember(data, func(key []byte, escaped bool, value []byte) {
		name := string(key)
		if escaped {
			name, _ = strconv.Unquote(`"` + name + `"`)
		}
		if name == redact.RecordKey {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), key...), `":`...), value...)
	})
	return append(out, '}')
}

// where says the field's path as a person reads it. Whether a step is an
// array index or a key of digits the record does not keep, so the steps
// are followed in data; where data does not have them (a record out of
// step with it), a step of digits reads as an index.
func where(data json.RawMessage, f redact.Field) string {
	steps := f.Path
	if f.Key && len(steps) > 0 {
		steps = steps[:len(steps)-1] // the key itself is in the words
	}
	var b strings.Builder
	v := data
	for _, s := range steps {
		index := isDigits(s)
		if len(v) > 0 {
			index = v[0] == '['
			v = step(v, s)
		}
		switch {
		case index:
			b.WriteString("[" + s + "]")
		case isWord(s):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		default:
			b.WriteString("[" + strconv.Quote(s) + "]")
		}
	}
	switch {
	case !f.Key && b.Len() == 0:
		return "the data" // no string of an object's: a record out of step
	case !f.Key:
		return b.String()
	case b.Len() == 0:
		return "a key"
	}
	return "a key in " + b.String()
}

// step is the value at s in the object or array v; nil when v has none.
func step(v json.RawMessage, s string) json.RawMessage {
	if v[0] == '{' {
		m, _ := eventlog.Member(v, s)
		return bytes.TrimSpace(m)
	}
	var elems []json.RawMessage
	i, err := strconv.Atoi(s)
	if err != nil || json.Unmarshal(v, &elems) != nil || i < 0 || i >= len(elems) {
		return nil
	}
	return bytes.TrimSpace(elems[i])
}

// isWord says a key reads plainly after a dot: letters, digits, _ and -,
// not starting with a digit.
func isWord(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
