package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// Projection ("provider/v1") folds the provider records of the live
// branch into what the next request is built from: the last request (its
// conversation list rebuilt from the requests it extends), its response,
// the inputs since, the tool calls the response asked for and which of
// them started or have a result, and whether a turn is open. Rollbacks are
// applied by replay, as for every projection. Its state holds the records
// as stored (secrets redacted, originals sealed); Conversation opens them.
//
// A Projection is not safe for concurrent use.
type Projection struct {
	s      projState
	codecs []Codec
}

var _ projection.Projection = (*Projection)(nil)

type projState struct {
	Request  *reqState       `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	RespSeq  int64           `json:"responseSeq,omitempty"`
	Inputs   []seqData       `json:"inputs,omitempty"`
	Calls    []string        `json:"calls,omitempty"`
	Started  []string        `json:"started,omitempty"`
	Results  []string        `json:"results,omitempty"`
	TurnOpen bool            `json:"turnOpen,omitempty"`
	Degraded []string        `json:"degraded,omitempty"`
}

type reqState struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
	// Items is the whole conversation list, as stored (each item may
	// carry its own sealed originals); nil when the body's list member
	// is not an array. List is that member's name.
	Items []json.RawMessage `json:"items"`
	List  string            `json:"list,omitempty"`
}

type seqData struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// NewProjection returns the provider projection in its empty state,
// folding the records of the codecs given (default Codecs()).
func NewProjection(codecs ...Codec) *Projection {
	if len(codecs) == 0 {
		codecs = Codecs()
	}
	return &Projection{codecs: codecs}
}

// Name returns "provider".
func (p *Projection) Name() string { return "provider" }

// Version returns 1.
func (p *Projection) Version() int { return 1 }

// Reset returns to the empty state.
func (p *Projection) Reset() { p.s = projState{} }

// MarshalState returns the state as JSON.
func (p *Projection) MarshalState() ([]byte, error) { return json.Marshal(p.s) }

// UnmarshalState replaces the state with one MarshalState returned.
func (p *Projection) UnmarshalState(data []byte) error {
	var s projState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("provider: state: %w", err)
	}
	p.s = s
	return nil
}

// Apply folds one event.
func (p *Projection) Apply(e eventlog.Event) {
	s := &p.s
	switch e.Type {
	case TypeRequest:
		items, list, err := p.items(e)
		if err != nil {
			s.Degraded = append(s.Degraded, fmt.Sprintf("seq %d: %v", e.Seq, err))
			return
		}
		*s = projState{Request: &reqState{Seq: e.Seq, Data: e.Data, Items: items, List: list}, TurnOpen: s.TurnOpen, Degraded: s.Degraded}
	case TypeResponse:
		r, err := decodeResponse(withoutRecord(e.Data))
		if err != nil || s.Request == nil || r.Request != s.Request.Seq {
			s.Degraded = append(s.Degraded, fmt.Sprintf("seq %d: a response to no request of the live branch", e.Seq))
			return
		}
		s.Response, s.RespSeq = e.Data, e.Seq
		s.Inputs, s.Calls, s.Started, s.Results = nil, nil, nil, nil
	case TypeInput:
		if _, err := decodeInput(withoutRecord(e.Data)); err != nil {
			s.Degraded = append(s.Degraded, fmt.Sprintf("seq %d: %v", e.Seq, err))
			return
		}
		s.Inputs = append(s.Inputs, seqData{e.Seq, e.Data})
	case "tool/call":
		if s.Response != nil {
			if id := str(e.Data, "id"); id != "" {
				s.Calls = append(s.Calls, id)
			}
		}
	case "tool/approval":
		if str(e.Data, "decision") == "approved" {
			s.Started = append(s.Started, str(e.Data, "id"))
		}
	case "tool/result":
		s.Results = append(s.Results, str(e.Data, "id"))
	case "turn/start":
		s.TurnOpen = true
	case "turn/end":
		s.TurnOpen = false
	}
}

// items rebuilds a request's whole conversation list from the previous
// request's and its own.
func (p *Projection) items(e eventlog.Event) ([]json.RawMessage, string, error) {
	d, err := decodeRequest(withoutRecord(e.Data))
	if err != nil {
		return nil, "", err
	}
	codecs := p.codecs
	if codecs == nil {
		codecs = Codecs()
	}
	c, err := codecNamed(codecs, d.Provider, d.API)
	if err != nil {
		return nil, "", err
	}
	key := c.ListKey()
	list, ok := getMember(d.Body, key)
	if !ok {
		return nil, "", nil
	}
	own, err := elements(list)
	if err != nil {
		if d.Base != nil {
			return nil, "", fmt.Errorf("%w: a request with a base whose %s is not an array", ErrRecord, key)
		}
		return nil, "", nil
	}
	if d.Base == nil {
		return own, key, nil
	}
	prev := p.s.Request
	if prev == nil || prev.Seq != d.Base.Seq || prev.Items == nil || d.Base.Keep > len(prev.Items) {
		return nil, "", fmt.Errorf("%w: request base {seq %d, keep %d} is not the previous request of the live branch", ErrRecord, d.Base.Seq, d.Base.Keep)
	}
	return append(slices.Clip(prev.Items[:d.Base.Keep]), own...), key, nil
}

// withoutRecord returns data without its top-level redaction record, for
// decoding (the record is read by Conversation).
func withoutRecord(data []byte) []byte {
	if _, ok := eventlog.Member(data, redact.RecordKey); !ok {
		return data
	}
	ms, err := members(data)
	if err != nil {
		return data
	}
	ms = slices.DeleteFunc(ms, func(m member) bool { return m.key == redact.RecordKey })
	b, err := joinObject(ms)
	if err != nil {
		return data
	}
	return b
}

// Conversation is the provider conversation at a seq of the live branch,
// with every sealed original opened: what an adapter rebuilds its SDK's
// request parameters from.
type Conversation struct {
	// Seq is the last seq applied.
	Seq int64
	// Request is the last request of the live branch, its body whole
	// (nil when there is none).
	Request *Request
	// Response is its response, when one was recorded (see Complete).
	Response *Response
	// Inputs are the inputs recorded after the response, in order.
	Inputs []Input
	// Calls are the ids of the tool calls the response asked for, in
	// order; Started those a loop marked as started (BeginTool); Results
	// those with a result.
	Calls, Started, Results []string
	// TurnOpen is true when the last turn/start has no turn/end after it.
	TurnOpen bool
	// Degraded lists records the projection could not fold.
	Degraded []string
}

// Complete reports whether the conversation's last request has a
// complete response.
func (c *Conversation) Complete() bool { return c.Response != nil && c.Response.Complete }

// Conversation opens the projection's state with keys (nil: no sealed
// original can be opened, and one met is an error wrapping ErrNoKey).
func (p *Projection) Conversation(keys *Keys) (Conversation, error) {
	s := p.s
	c := Conversation{
		Calls: slices.Clone(s.Calls), Started: slices.Clone(s.Started), Results: slices.Clone(s.Results),
		TurnOpen: s.TurnOpen, Degraded: slices.Clone(s.Degraded),
	}
	open := func(text string) ([]byte, error) {
		if keys == nil {
			return nil, ErrNoKey
		}
		return keys.open(text)
	}
	if s.Request != nil {
		req, err := openRequest(s.Request, open)
		if err != nil {
			return c, err
		}
		c.Request = &req
	}
	if s.Response != nil {
		data, err := redact.Restore(s.Response, open)
		if err != nil {
			return c, fmt.Errorf("provider: response at seq %d: %w", s.RespSeq, err)
		}
		r, err := decodeResponse(data)
		if err != nil {
			return c, err
		}
		r.Seq = s.RespSeq
		c.Response = &r
	}
	for _, in := range s.Inputs {
		data, err := redact.Restore(in.Data, open)
		if err != nil {
			return c, fmt.Errorf("provider: input at seq %d: %w", in.Seq, err)
		}
		v, err := decodeInput(data)
		if err != nil {
			return c, err
		}
		v.Seq = in.Seq
		c.Inputs = append(c.Inputs, v)
	}
	return c, nil
}

// openRequest rebuilds a request's whole body in clear.
func openRequest(rs *reqState, open func(string) ([]byte, error)) (Request, error) {
	return openRequestWith(rs, open)
}

// restoreOrStrip opens data's sealed originals with open, or, when open
// is nil, drops its record and leaves the markers: the redacted form.
func restoreOrStrip(data []byte, open func(string) ([]byte, error)) ([]byte, error) {
	if open == nil {
		return withoutRecord(data), nil
	}
	return redact.Restore(data, open)
}

// openResponse decodes a stored response, opened or stripped as
// restoreOrStrip does.
func openResponse(stored []byte, open func(string) ([]byte, error)) (Response, error) {
	data, err := restoreOrStrip(stored, open)
	if err != nil {
		return Response{}, err
	}
	return decodeResponse(data)
}

// openRequestWith rebuilds a request's whole body: in clear, or with
// open nil in its redacted form.
func openRequestWith(rs *reqState, open func(string) ([]byte, error)) (Request, error) {
	data, err := restoreOrStrip(rs.Data, open)
	if err != nil {
		return Request{}, fmt.Errorf("provider: request at seq %d: %w", rs.Seq, err)
	}
	d, err := decodeRequest(data)
	if err != nil {
		return Request{}, err
	}
	body := d.Body
	if rs.Items != nil {
		items := make([]json.RawMessage, len(rs.Items))
		for i, it := range rs.Items {
			if items[i], err = restoreOrStrip(it, open); err != nil {
				return Request{}, fmt.Errorf("provider: request at seq %d, item %d: %w", rs.Seq, i, err)
			}
		}
		if body, err = setMember(body, rs.List, joinArray(items)); err != nil {
			return Request{}, fmt.Errorf("%w: request at seq %d: %w", ErrRecord, rs.Seq, err)
		}
	}
	return Request{Seq: rs.Seq, Provider: d.Provider, API: d.API, Method: d.Method, Path: d.Path, Header: d.Header, Body: body}, nil
}

// setMember replaces the value of obj's member key, keeping the members'
// order and every other byte.
func setMember(obj []byte, key string, val []byte) ([]byte, error) {
	ms, err := members(obj)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].key == key {
			ms[i].raw = val
			return joinObject(ms)
		}
	}
	return nil, fmt.Errorf("no member %q", key)
}

// At replays src up to seq (rollbacks applied; a fork's inherited events
// included) and returns the provider conversation there, opened with
// keys.
func At(ctx context.Context, src replay.Source, seq int64, keys *Keys, opts ...replay.Option) (Conversation, error) {
	p := NewProjection()
	res, err := replay.Replay(ctx, src, []projection.Projection{p}, append(opts, replay.UpTo(seq))...)
	if err != nil {
		return Conversation{}, err
	}
	c, err := p.Conversation(keys)
	c.Seq = res.Seq
	return c, err
}
