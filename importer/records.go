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

// Record begins the events of one source record: its line (or index,
// from 1) and its bytes. Each record must be ended by Keep before the next
// begins.
func (b *Builder) Record(line int, raw json.RawMessage) {
	b.mark.events, b.mark.last, b.mark.err = len(b.events), b.last, b.err
	b.line, b.raw, b.taken = line, raw, false
	b.records++
}

// Drop undoes the current record: its events, and an error they caused.
func (b *Builder) Drop() {
	b.events, b.last, b.err = b.events[:b.mark.events], b.mark.last, b.mark.err
	b.raw, b.taken = nil, false
	b.records--
}

// Src is the "source" value of an event made from the current record:
// {"line","record"} for the first event that asks, {"line"} after. Use it
// only in the data of an event added at once.
func (b *Builder) Src() Obj {
	if b.taken || b.raw == nil {
		return Obj{"line", int64(b.line)}
	}
	b.taken = true
	return Obj{"line", int64(b.line), "record", b.raw}
}

// Taken reports whether an event took the current record.
func (b *Builder) Taken() bool { return b.taken }

// AddRecord adds an event of type typ at time t (see Add) whose data is
// the current record, unless an event took it already. typ must be of
// the format's namespace (see Namespace).
func (b *Builder) AddRecord(typ string, t int64) {
	if !b.taken && b.raw != nil {
		b.Add(typ, t, b.raw)
		b.taken = true
	}
}

// Keep ends the current record: when no event took it (Src), it adds an
// event of type typ at time t whose data is the record (AddRecord).
func (b *Builder) Keep(typ string, t int64) {
	b.AddRecord(typ, t)
	b.raw, b.taken = nil, false
}

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

// Records returns how many records Record began.
func (b *Builder) Records() int { return b.records }

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

// LineRecords splits JSONL data into its records: each line that is not
// blank, compacted as the log stores data (a line that is not JSON is
// left as it is), but a torn last line (see Lines). These are what an
// import of a JSONL format keeps.
func LineRecords(data []byte) []json.RawMessage {
	var out []json.RawMessage
	for len(data) > 0 {
		line, rest, found := bytes.Cut(data, []byte("\n"))
		data = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 || (!found && !json.Valid(line)) {
			continue
		}
		if c, err := Marshal(json.RawMessage(line)); err == nil {
			line = c
		}
		out = append(out, line)
	}
	return out
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
