package importer

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// An import is lossless by construction: every source record (a JSONL
// line; for a one-document format, a part of the document) is kept in the
// session, in one of two ways:
//
//   - the first event of the vocabulary made from it carries it whole, as
//     "source":{"line":N,"record":R} (the record's other events carry
//     "source":{"line":N});
//   - a record no vocabulary event stands for becomes an event of the
//     format's own namespace, "<format>/<record type>" (claude/progress,
//     codex/event_msg), whose data is the record.
//
// RecordOf finds the record an event carries; the records of a session,
// in seq order, are the source's records in order (the tests of every
// format rebuild each real trace so and compare it with the source).

// SourceKey is the data key under which a vocabulary event names the
// record it came from.
const SourceKey = "source"

// vocabulary are the event types of docs/format.md §8.
var vocabulary = map[string]bool{
	"turn/start": true, "user/message": true, "step/start": true, "assistant/chunk": true,
	"assistant/reasoning": true, "assistant/message": true, "tool/call": true, "tool/approval": true,
	"tool/result": true, "usage": true, "step/end": true, "turn/end": true, "memory/set": true,
	"memory/delete": true, "provider/state": true, "slot/switch": true, "context/compacted": true,
	"plan/set": true,
}

// IsVocabulary reports whether typ is a type of the agent vocabulary
// (docs/format.md §8).
func IsVocabulary(typ string) bool { return vocabulary[typ] }

// Namespace returns the type of an event that holds a record of format
// whose own type is typ: "<format>/<typ>", or "<format>/record" when typ
// is empty or would make no valid event type.
func Namespace(format, typ string) string {
	t := format + "/" + typ
	if typ == "" || eventlog.ValidateType(t) != nil {
		return format + "/record"
	}
	return t
}

// RecordOf returns the source record event e of an import of format
// carries, and whether it carries one: the data of an event of the
// format's namespace, or the "source"."record" of another.
func RecordOf(format string, e eventlog.Event) (json.RawMessage, bool) {
	if strings.HasPrefix(e.Type, format+"/") {
		return e.Data, true
	}
	if !bytes.Contains(e.Data, []byte(`"record"`)) {
		return nil, false
	}
	var d struct {
		Source *struct {
			Record json.RawMessage `json:"record"`
		} `json:"source"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Source == nil || len(d.Source.Record) == 0 {
		return nil, false
	}
	return d.Source.Record, true
}

// Without returns the JSON object obj without its top-level members
// named keys, the others in their order, compacted.
func Without(obj []byte, keys ...string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, Formatf("not a JSON object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, FormatError(err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, FormatError(err)
		}
		if slices.Contains(keys, key) {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := Marshal(key)
		v, err := Marshal(val)
		if err != nil {
			return nil, FormatError(err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Args are a call's arguments: a string holding JSON (how OpenAI's APIs
// send them) becomes that JSON, another string stays a string, other JSON
// stays as it is, and none is {}.
func Args(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
		b, _ := Marshal(s)
		return b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}
