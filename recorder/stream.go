package recorder

import (
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
)

// stream is the Recorder's fold of the open step's streamed text
// (docs/format.md §8, "Streamed text"): the text of the step's
// assistant/chunk events while the step has had no assistant/message and
// no tool/call. The Recorder records that text as the step's
// assistant/message before the step's first tool call or its end, so that
// a step the caller only streamed keeps its words.
//
// It is a projection so that the replay engine rebuilds it exactly as it
// rebuilds the agent state, rollbacks included; it is private to the
// Recorder and never named in a checkpoint.
type stream struct{ s streamState }

type streamState struct {
	// Open: a step is open. Covered: it has had an assistant/message or a
	// tool/call, so its chunks are not its message. Chunks counts the
	// chunks before that; Text joins them.
	Open    bool   `json:"open"`
	Covered bool   `json:"covered"`
	Chunks  int    `json:"chunks"`
	Text    []byte `json:"text"`
}

var _ projection.Projection = (*stream)(nil)

func (p *stream) Name() string { return "recorder-stream" }
func (p *stream) Version() int { return 1 }
func (p *stream) Reset()       { p.s = streamState{} }

func (p *stream) Apply(e eventlog.Event) {
	switch e.Type {
	case "step/start":
		p.s = streamState{Open: true, Text: p.s.Text[:0]}
	case "step/end", "turn/end", "turn/start":
		p.s = streamState{Text: p.s.Text[:0]}
	case "assistant/message", "tool/call":
		p.s.Covered = true
	case "assistant/chunk":
		if !p.s.Open || p.s.Covered {
			return
		}
		var d struct {
			Text *string `json:"text"`
		}
		// Keys are exact, as the projections read them; a chunk of the
		// wrong shape carries no text.
		if json.Unmarshal(eventlog.ExactKeys(e.Data, "text"), &d) != nil || d.Text == nil {
			return
		}
		p.s.Chunks++
		p.s.Text = append(p.s.Text, *d.Text...)
	}
}

// pending returns the text to record as the step's assistant/message, and
// whether there is one.
func (p *stream) pending() (string, bool) {
	if p.s.Open && !p.s.Covered && p.s.Chunks > 0 {
		return string(p.s.Text), true
	}
	return "", false
}

func (p *stream) MarshalState() ([]byte, error) {
	b, err := json.Marshal(&p.s)
	if err != nil {
		return nil, fmt.Errorf("recorder stream: marshal state: %w", err)
	}
	return b, nil
}

func (p *stream) UnmarshalState(data []byte) error {
	var s streamState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("recorder stream: unmarshal state: %w", err)
	}
	p.s = s
	return nil
}
