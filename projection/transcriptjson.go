package projection

import (
	"fmt"
	"io"
	"slices"
	"unsafe"
)

// stateChunk is how much of a state WriteState holds before it writes it
// out.
const stateChunk = 64 << 10

// stateOut collects a state's JSON: all of it (w nil), or stateChunk at a
// time written to w.
type stateOut struct {
	b   []byte
	w   io.Writer
	err error
}

// flush writes what is collected to w once it is a chunk (or, at the end,
// whatever is left); without w it keeps collecting.
func (o *stateOut) flush(end bool) {
	if o.w == nil || o.err != nil || (!end && len(o.b) < stateChunk) {
		return
	}
	_, o.err = o.w.Write(o.b)
	o.b = o.b[:0]
}

// encodeState writes the state as json.Marshal(&t.s) writes it, a message
// at a time, hashing each message not hashed yet from the same bytes (so
// that MarshalState and WriteState make the hash chain as hash does). The
// caller has synced the streamed text.
func (t *Transcript) encodeState(o *stateOut) error {
	msgs := t.s.Messages
	t.chain = slices.Grow(t.chain, len(msgs)-len(t.chain))
	o.b = append(o.b, `{"messages":[`...)
	for i := range msgs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		at := len(o.b)
		var err error
		if o.b, err = appendMessage(o.b, &msgs[i], &t.win); err != nil {
			return fmt.Errorf("projection transcript: marshal state: message %d: %w", i, err)
		}
		if i == len(t.chain) {
			t.extendChain(o.b[at:])
		}
		o.flush(false)
	}
	t.setPrefixHash()
	s := &t.s
	o.b = append(o.b, ']')
	if s.PrefixHash != "" {
		o.b = appendString(append(o.b, `,"prefixHash":`...), s.PrefixHash)
	}
	if s.CurrentSlot != "" {
		o.b = appendString(append(o.b, `,"currentSlot":`...), s.CurrentSlot)
	}
	if len(s.PendingReasoning) > 0 {
		o.b = appendReasoning(append(o.b, `,"pendingReasoning":`...), s.PendingReasoning)
	}
	o.b = appendInt(append(o.b, `,"stepStart":`...), s.StepStart)
	if s.StepOpen {
		o.b = append(o.b, `,"stepOpen":true`...)
	}
	if len(s.Degraded) > 0 {
		o.b = append(o.b, `,"degraded":[`...)
		for i, d := range s.Degraded {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendInt(append(o.b, `{"seq":`...), d.Seq)
			o.b = appendString(append(o.b, `,"type":`...), d.Type)
			o.b = appendString(append(o.b, `,"reason":`...), d.Reason)
			o.b = append(o.b, '}')
		}
		o.b = append(o.b, ']')
	}
	o.b = append(o.b, '}')
	o.flush(true)
	return o.err
}

// appendMessage appends m as json.Marshal writes a Message (its fields in
// order, omitempty as tagged), reading what it left in the log back
// through w.
func appendMessage(b []byte, m *Message, w *window) ([]byte, error) {
	b = appendInt(append(b, `{"seq":`...), m.Seq)
	b = appendString(append(b, `,"role":`...), m.Role)
	if m.text != nil {
		var err error
		if b, err = appendTextSpan(append(b, `,"text":`...), m.text, w); err != nil {
			return b, err
		}
	} else if m.Text != "" {
		b = appendString(append(b, `,"text":`...), m.Text)
	}
	if len(m.Reasoning) > 0 {
		b = appendReasoning(append(b, `,"reasoning":`...), m.Reasoning)
	}
	if m.Slot != "" {
		b = appendString(append(b, `,"slot":`...), m.Slot)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"toolCalls":[`...)
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(append(b, `{"id":`...), c.ID)
			b = appendString(append(b, `,"name":`...), c.Name)
			var err error
			if b, err = appendRaw(append(b, `,"args":`...), c.Args); err != nil {
				return b, err
			}
			if c.Effect != "" {
				b = appendString(append(b, `,"effect":`...), c.Effect)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = appendString(append(b, `,"toolCallId":`...), m.ToolCallID)
	}
	if m.Name != "" {
		b = appendString(append(b, `,"name":`...), m.Name)
	}
	if m.out != nil {
		var err error
		if b, err = appendSpan(append(b, `,"output":`...), m.out, w); err != nil {
			return b, err
		}
	} else if len(m.Output) > 0 {
		var err error
		if b, err = appendRaw(append(b, `,"output":`...), m.Output); err != nil {
			return b, err
		}
	}
	if m.Error != "" {
		b = appendString(append(b, `,"error":`...), m.Error)
	}
	if m.Synthetic {
		b = append(b, `,"synthetic":true`...)
	}
	if m.Partial {
		b = append(b, `,"partial":true`...)
	}
	return append(b, '}'), nil
}

// appendSpan appends the raw value s holds as appendRaw does, read from
// the log through w.
func appendSpan(b []byte, s *span, w *window) ([]byte, error) {
	raw, err := w.get(s)
	if err != nil {
		return b, err
	}
	return appendRaw(b, raw)
}

// appendTextSpan appends the string the JSON string s holds as
// appendString does, read from the log through w (and, unless plain,
// unquoted into w's scratch).
func appendTextSpan(b []byte, s *span, w *window) ([]byte, error) {
	raw, err := w.get(s)
	if err != nil {
		return b, err
	}
	text := raw[1 : s.n-1]
	if !s.plain {
		w.scratch, _ = appendUnquoted(w.scratch[:0], raw)
		text = w.scratch
	}
	if len(text) == 0 {
		return appendString(b, ""), nil
	}
	return appendString(b, unsafe.String(&text[0], len(text))), nil
}

// appendReasoning appends rs as json.Marshal writes a []Reasoning.
func appendReasoning(b []byte, rs []Reasoning) []byte {
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(b, `{"text":`...), r.Text)
		if r.Signature != "" {
			b = appendString(append(b, `,"signature":`...), r.Signature)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
