package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Exchange is one model call of a session's live branch: its request
// (whole body) and the last response recorded for it (nil when none), in
// clear when the keys open them, else as stored (secrets redacted).
type Exchange struct {
	Request  Request
	Response *Response
	// Inputs are the inputs recorded between this response and the next
	// request (tool results).
	Inputs []Input
}

// exchanges is a projection that keeps every exchange of the live branch:
// the provider projection's request and response each time one is
// recorded, so a rollback, which restores this state, drops the
// exchanges of the branch it abandons.
type exchanges struct {
	p    Projection
	List []exState `json:"list"`
}

type exState struct {
	Req     reqState        `json:"req"`
	Resp    json.RawMessage `json:"resp,omitempty"`
	RespSeq int64           `json:"respSeq,omitempty"`
	Inputs  []seqData       `json:"inputs,omitempty"`
}

func (x *exchanges) Name() string { return "provider-exchanges" }
func (x *exchanges) Version() int { return 1 }
func (x *exchanges) Reset()       { x.p.Reset(); x.List = nil }
func (x *exchanges) MarshalState() ([]byte, error) {
	return json.Marshal(struct {
		P    projState `json:"p"`
		List []exState `json:"list"`
	}{x.p.s, x.List})
}
func (x *exchanges) UnmarshalState(data []byte) error {
	var s struct {
		P    projState `json:"p"`
		List []exState `json:"list"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	x.p.s, x.List = s.P, s.List
	return nil
}

func (x *exchanges) Apply(e eventlog.Event) {
	before, inputs := x.p.s.Request, len(x.p.s.Inputs)
	x.p.Apply(e)
	s := x.p.s
	switch {
	case e.Type == TypeRequest && s.Request != nil && s.Request != before:
		x.List = append(x.List, exState{Req: *s.Request})
	case e.Type == TypeResponse && len(x.List) > 0 && s.RespSeq == e.Seq:
		last := &x.List[len(x.List)-1]
		last.Resp, last.RespSeq, last.Inputs = s.Response, s.RespSeq, nil
	case e.Type == TypeInput && len(x.List) > 0 && len(s.Inputs) > inputs:
		last := &x.List[len(x.List)-1]
		last.Inputs = append(last.Inputs, seqData{e.Seq, e.Data})
	}
}

var _ projection.Projection = (*exchanges)(nil)

// Exchanges returns the model calls of src's live branch up to seq (End
// for all), in order: rollbacks applied, a fork's inherited calls
// included. With keys, every sealed original is opened; without (nil),
// the records come as stored, their secrets redacted.
func Exchanges(ctx context.Context, src replay.Source, upTo int64, keys *Keys, opts ...replay.Option) ([]Exchange, error) {
	x := &exchanges{}
	if upTo >= 0 {
		opts = append(opts, replay.UpTo(upTo))
	}
	if _, err := replay.Replay(ctx, src, []projection.Projection{x}, opts...); err != nil {
		return nil, err
	}
	open := func(text string) ([]byte, error) {
		if keys == nil {
			return nil, ErrNoKey
		}
		return keys.open(text)
	}
	if keys == nil {
		open = nil
	}
	out := make([]Exchange, 0, len(x.List))
	for _, ex := range x.List {
		req, err := openRequestWith(&ex.Req, open)
		if err != nil {
			return nil, err
		}
		e := Exchange{Request: req}
		if ex.Resp != nil {
			r, err := openResponse(ex.Resp, open)
			if err != nil {
				return nil, fmt.Errorf("provider: response at seq %d: %w", ex.RespSeq, err)
			}
			r.Seq = ex.RespSeq
			e.Response = &r
		}
		for _, in := range ex.Inputs {
			data, err := restoreOrStrip(in.Data, open)
			if err != nil {
				return nil, fmt.Errorf("provider: input at seq %d: %w", in.Seq, err)
			}
			v, err := decodeInput(data)
			if err != nil {
				return nil, err
			}
			v.Seq = in.Seq
			e.Inputs = append(e.Inputs, v)
		}
		out = append(out, e)
	}
	return out, nil
}
