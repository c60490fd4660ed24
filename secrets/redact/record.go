package redact

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// Field is one entry of an event's redaction record: a string of its data
// that held secrets, and their kinds.
type Field struct {
	// Path leads from the data to the string: object keys, and array
	// indices in decimal. A redacted key's path ends in its new name.
	Path []string
	// Key is true when the string is an object key, not a value.
	Key bool
	// Kinds are the kinds of the secrets replaced in it, sorted.
	Kinds []string
	// Sealed is the string's original, sealed (Escrow), or "" when it
	// was only redacted.
	Sealed string
}

// Pointer returns the field's path as a JSON Pointer (RFC 6901).
func (f Field) Pointer() string {
	var b strings.Builder
	for _, p := range f.Path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// Fields returns the redaction record of an event's data: the fields its
// RecordKey member lists, or nil when it has none. Data that is not an
// object has no record: its markers say what was redacted. A member of
// another shape is an error.
func Fields(data []byte) ([]Field, error) {
	v, ok := eventlog.Member(data, RecordKey)
	if !ok {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(v, &raws); err != nil {
		return nil, fmt.Errorf("redact: the %s member is not a redaction record: %w", RecordKey, err)
	}
	out := make([]Field, 0, len(raws))
	for _, raw := range raws {
		var e struct {
			Path   []json.RawMessage `json:"path"`
			Key    bool              `json:"key"`
			Kinds  []string          `json:"kinds"`
			Sealed string            `json:"sealed"`
		}
		// Keys are exact, as everywhere in the format.
		if err := json.Unmarshal(eventlog.ExactKeys(raw, "path", "key", "kinds", "sealed"), &e); err != nil {
			return nil, fmt.Errorf("redact: an entry of the %s member is not a redacted field: %w", RecordKey, err)
		}
		f := Field{Key: e.Key, Kinds: e.Kinds, Sealed: e.Sealed}
		for _, p := range e.Path {
			var s string
			if err := json.Unmarshal(p, &s); err == nil {
				f.Path = append(f.Path, s)
				continue
			}
			var n int64
			if err := json.Unmarshal(p, &n); err != nil {
				return nil, fmt.Errorf("redact: a path step of the %s member is neither a key nor an index: %s", RecordKey, p)
			}
			f.Path = append(f.Path, strconv.FormatInt(n, 10))
		}
		out = append(out, f)
	}
	return out, nil
}
