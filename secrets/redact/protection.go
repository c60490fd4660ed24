package redact

import (
	"fmt"
	"strings"
)

// Protection says what keeps a session's secrets out of its file: whether
// the session is sealed (every row encrypted, docs/format.md §11), how
// many strings of its events were redacted, and of those how many keep
// their original sealed to the agent's key (Escrow). Count adds an
// event's record.
type Protection struct {
	Sealed bool `json:"sealed"`
	// Redacted counts the strings redacted (their record entries),
	// Escrowed those among them whose original is sealed.
	Redacted int64 `json:"redacted"`
	Escrowed int64 `json:"escrowed"`
}

// Count adds the redaction record of one event's data. A record that
// cannot be read counts as nothing: verify reports damage, not this.
func (p *Protection) Count(data []byte) {
	fields, err := Fields(data)
	if err != nil {
		return
	}
	for _, f := range fields {
		p.Redacted++
		if f.Sealed != "" {
			p.Escrowed++
		}
	}
	// A record nested in a conversation item (provider requests keep
	// one per item) is counted too.
	for _, f := range nestedRecords(data) {
		p.Redacted++
		if f.Sealed != "" {
			p.Escrowed++
		}
	}
}

// nestedRecords finds the records of the conversation items of a
// provider request's body: body.<list>[i].$redacted.
func nestedRecords(data []byte) []Field {
	if !strings.Contains(string(data), `"`+RecordKey+`"`) {
		return nil
	}
	var out []Field
	top, _, body, ok := member(data, skipWS(data, 0), "body")
	_ = top
	if !ok || body >= len(data) || data[body] != '{' {
		return nil
	}
	for _, list := range []string{"messages", "input"} {
		_, _, la, ok := member(data, body, list)
		if !ok || data[la] != '[' {
			continue
		}
		for i := 0; ; i++ {
			at, ok := element(data, la, i)
			if !ok {
				break
			}
			end := skipValue(data, at)
			if end < 0 {
				break
			}
			if fs, err := Fields(data[at:end]); err == nil {
				out = append(out, fs...)
			}
		}
	}
	return out
}

// String says it in words: "sealed; 3 strings redacted, 2 of them sealed
// to the agent's key".
func (p Protection) String() string {
	var parts []string
	if p.Sealed {
		parts = append(parts, "sealed")
	}
	switch {
	case p.Redacted == 0:
		parts = append(parts, "no secret found at write")
	case p.Escrowed == 0:
		parts = append(parts, fmt.Sprintf("%s redacted", strs(p.Redacted)))
	default:
		parts = append(parts, fmt.Sprintf("%s redacted, %d of them sealed to the agent's key", strs(p.Redacted), p.Escrowed))
	}
	return strings.Join(parts, "; ")
}

func strs(n int64) string {
	if n == 1 {
		return "1 string"
	}
	return fmt.Sprintf("%d strings", n)
}
