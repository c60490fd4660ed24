package provider

import (
	"bytes"
	"encoding/json"
)

// SSEEvent is one server-sent event of a streamed response, as the
// provider framed it: its event name, its data (the JSON value when the
// data is JSON, else a JSON string of the text), and its id when it had
// one. A stream is kept event by event, so it is served back with the
// same boundaries and order.
type SSEEvent struct {
	Event string          `json:"event,omitempty"`
	ID    string          `json:"id,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// Text returns the event's data as the provider sent it on its data
// lines.
func (e SSEEvent) Text() []byte {
	if len(e.Data) > 0 && e.Data[0] == '"' {
		var s string
		if json.Unmarshal(e.Data, &s) == nil {
			return []byte(s)
		}
	}
	return e.Data
}

// ParseSSE splits a text/event-stream body into its events (the
// WHATWG's event-stream rules): lines end in LF, CRLF or CR; a blank line
// ends an event; "data" lines are joined with LF; a line starting with
// ':' is a comment; an event with no data line is not dispatched. What
// follows the last blank line is an event cut short: rest holds its
// bytes (empty when the body ended on an event's end).
func ParseSSE(body []byte) (events []SSEEvent, rest []byte) {
	var (
		cur     SSEEvent
		data    []byte
		hasData bool
		start   int // where the current event's first line starts
	)
	for i := 0; i < len(body); {
		end := bytes.IndexAny(body[i:], "\r\n")
		if end < 0 {
			break // an unfinished line
		}
		line := body[i : i+end]
		next := i + end + 1
		if body[i+end] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		} else if body[i+end] == '\r' && next == len(body) {
			break // a CR that may yet be followed by LF
		}
		i = next
		if len(line) == 0 {
			if hasData {
				cur.Data = sseData(data)
				events = append(events, cur)
			}
			cur, data, hasData, start = SSEEvent{}, nil, false, i
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			field, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			cur.Event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "id":
			cur.ID = string(value)
		}
	}
	return events, body[start:]
}

// sseData is an event's data as stored: the JSON value when it is one (so
// that its strings are scanned and redacted as JSON), else a JSON string.
func sseData(d []byte) json.RawMessage {
	if t := bytes.TrimSpace(d); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) && bytes.Equal(t, d) {
		var b bytes.Buffer
		if json.Compact(&b, d) == nil && b.Len() == len(d) {
			return json.RawMessage(bytes.Clone(d))
		}
	}
	b, _ := marshal(string(d)) // a string always encodes
	return json.RawMessage(b)
}

// WriteSSE appends events in the event-stream framing: each field on its
// own line, each event ended by a blank line.
func WriteSSE(dst []byte, events []SSEEvent) []byte {
	for _, e := range events {
		if e.Event != "" {
			dst = append(append(append(dst, "event: "...), e.Event...), '\n')
		}
		if e.ID != "" {
			dst = append(append(append(dst, "id: "...), e.ID...), '\n')
		}
		for _, line := range bytes.Split(e.Text(), []byte("\n")) {
			dst = append(append(append(dst, "data: "...), line...), '\n')
		}
		dst = append(dst, '\n')
	}
	return dst
}
