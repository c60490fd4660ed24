package dsh

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "dsh"

// New returns the importer of DeepSeek Harness session logs (*.jsonl).
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".jsonl", SniffFunc: Sniff, ConvertFunc: convert}
}

func convert(ctx context.Context, r io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	return convertRows(ctx, r, name, cfg, emit, false)
}

// Sniff reports whether head starts with a dsh header
// {"type":"session","version","createdAt",…}.
func Sniff(head []byte) bool {
	m, ok := importer.Head(head)
	if !ok || importer.HeadString(m, "type") != "session" {
		return false
	}
	_, v := m["version"]
	_, c := m["createdAt"]
	return v && c
}

// Parse converts one dsh session log, its events collected in the session (for
// tests and small traces).
func Parse(r io.ReadSeeker, name string) (importer.Session, error) {
	return importer.Parse(context.Background(), New(), r, name, importer.Config{})
}

// Convert converts one dsh session log, handing its events to emit row by
// row (see the package doc).
//
// A dsh row numbers its events (seq, seq0). A row SkipBad goes past
// leaves a gap in that numbering: the rows after it are numbered on from
// the last event kept, the source's seqs checked to go on past the gap.
func Convert(ctx context.Context, r io.Reader, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
	return convertRows(ctx, r, name, cfg, emit, false)
}

// convertRows is Convert; with resyncAtBlank, a blank line is a gap in
// the source's numbering as a skipped row is (the tests' reference for
// SkipBad: the log with the rows it skipped blank).
func convertRows(ctx context.Context, r io.Reader, name string, cfg importer.Config, emit importer.Emit, resyncAtBlank bool) (importer.Session, error) {
	s := importer.NewSession(Name, name)
	b := importer.NewBuilder(cfg, emit)
	var (
		lg   Log
		p    *parser
		open turnState
	)
	// settle runs as each row after the header begins (inRow) and after
	// the last: what a row the builder dropped (a bad row: Drop takes back
	// its events) changed is put back as that row found it
	// (importer.Undo). The labels only grow (SetLabel adds, never
	// changes): a copy is made when they grew.
	undo := importer.NewUndo[rowState](b)
	settle := func(inRow bool) {
		if p == nil {
			return
		}
		undo.Settle(inRow, func(prev rowState) rowState {
			labels := prev.labels
			if len(s.Labels) != len(labels) {
				labels = maps.Clone(s.Labels)
			}
			return rowState{p.next, p.lastTime, p.shift, p.resync, open.clone(), labels}
		}, func(kept rowState) {
			p.next, p.lastTime, p.shift, open = kept.next, kept.lastTime, kept.shift, kept.open
			p.resync = true // the source's numbering goes on past the row
			if len(s.Labels) != len(kept.labels) {
				s.Labels = maps.Clone(kept.labels)
			}
		})
	}
	last := 0 // the line of the last row
	err := b.Lines(ctx, r, func(n int, row []byte) error {
		settle(true)
		if resyncAtBlank && p != nil && n > last+1 {
			p.resync = true
		}
		last = n
		if p == nil {
			h, err := parseHeader(row)
			if err != nil {
				return importer.FormatError(err)
			}
			lg, p = h, &parser{s: &lg, lastTime: h.CreatedAt, both: true}
			setHeader(&s, lg)
			b.Keep(importer.Namespace(Name, "session"), s.CreatedAt)
			return nil
		}
		p.line = n
		p.emit = func(orig, voc eventlog.Event) error {
			event(&s, b, orig, voc)
			open.see(voc)
			return nil
		}
		if err := p.row(row); err != nil {
			return rowError{err}
		}
		b.Keep(importer.Namespace(Name, "record"), b.Last())
		return nil
	})
	settle(false)
	if err != nil {
		return importer.Session{}, err
	}
	if p == nil {
		return importer.Session{}, importer.Formatf("%v: empty", ErrFormat)
	}
	open.close(b)
	s.ID = lg.ID
	if err := b.Done(&s); err != nil {
		return importer.Session{}, err
	}
	return s, nil
}

// rowState is what a row changes of an import: the seq and time its
// events take, the source's numbering, the turn they leave open, the
// labels they tell.
type rowState struct {
	next, lastTime, shift int64
	resync                bool
	open                  turnState
	labels                map[string]string
}

// turnState is what the log's own lifecycle events leave open: a log that
// stops mid-turn is closed at its end, as `logtool resume` would.
type turnState struct {
	turn, step bool
	calls      importer.Calls
}

func (o turnState) clone() turnState {
	var c turnState
	c.turn, c.step = o.turn, o.step
	for _, id := range o.calls.IDs() {
		c.calls.Call(id)
	}
	return c
}

// see follows one event in the vocabulary's shape.
func (o *turnState) see(e eventlog.Event) {
	switch e.Type {
	case "turn/start":
		o.turn = true
	case "turn/end":
		o.turn, o.step = false, false
		o.calls.Clear()
	case "step/start":
		o.step = true
	case "step/end":
		o.step = false
	case "tool/call", "tool/result":
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.ID == "" {
			return
		}
		if e.Type == "tool/call" {
			o.calls.Call(d.ID)
		} else {
			o.calls.Result(d.ID)
		}
	}
}

// close ends what the end of the log leaves open: synthetic results for
// calls without one, step/end, turn/end {"kind":"interrupted"}.
func (o *turnState) close(b *importer.Builder) {
	if !o.turn {
		return
	}
	b.Unanswered(&o.calls, -1)
	if o.step {
		b.Add("step/end", -1, importer.Obj{})
	}
	b.Add("turn/end", -1, importer.Obj{"kind", "interrupted", "reason", importer.ReasonTraceEnds})
}

// setHeader sets the session's createdAt and labels from the log's header.
func setHeader(s *importer.Session, lg Log) {
	s.CreatedAt = lg.CreatedAt
	s.SetLabel("sourceId", lg.Labels["dsh.id"])
	s.SetLabel("cwd", lg.Labels["dsh.cwd"])
	for k, v := range lg.Labels {
		switch k {
		case "source", "dsh.id", "dsh.cwd":
		default:
			s.SetLabel(k, v)
		}
	}
}

// event adds the events of one dsh event: orig as the log has it, voc
// with its data in the vocabulary's shape.
func event(s *importer.Session, b *importer.Builder, orig, e eventlog.Event) {
	switch e.Type {
	case "request/header":
		var d struct {
			Header struct {
				Config struct {
					Model string `json:"model"`
				} `json:"config"`
			} `json:"header"`
		}
		_ = json.Unmarshal(orig.Data, &d) // another shape: no model
		s.SetLabel("model", d.Header.Config.Model)
	case "session/title":
		var d struct {
			Title string `json:"title"`
		}
		_ = json.Unmarshal(orig.Data, &d)
		s.SetLabel("title", d.Title)
	}
	rewritten := !bytes.Equal(e.Data, orig.Data)
	if !importer.IsVocabulary(orig.Type) && e.Type == orig.Type {
		// dsh's own types: the row itself, in dsh's namespace.
		b.AddRecord(importer.Namespace(Name, orig.Type), e.Time)
		if b.Taken() {
			return
		}
	}
	if e.Type == "assistant/chunk" && b.Taken() {
		// The packed row's later deltas: its first carries the row.
		b.Add(e.Type, e.Time, e.Data)
		return
	}
	if e.Type != "assistant/message" || !rewritten {
		if !canCarry(e.Data) {
			// Data that can hold no "source": the row kept beside it.
			b.AddRecord(importer.Namespace(Name, "record"), e.Time)
			b.Add(e.Type, e.Time, e.Data)
			return
		}
		b.Add(e.Type, e.Time, withSource(e.Data, b.Src()))
		return
	}
	var d struct {
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Source struct {
				Model string `json:"model"`
			} `json:"source"`
		} `json:"message"`
		Usage json.RawMessage `json:"usage"`
	}
	_ = json.Unmarshal(orig.Data, &d) // the vocabulary read it: it is an object
	for _, p := range d.Message.Content {
		if p.Type == "reasoning" {
			b.Add("assistant/reasoning", e.Time, importer.Obj{"text", p.Text, "source", b.Src()})
		}
	}
	b.Add(e.Type, e.Time, withSource(e.Data, b.Src()))
	s.SetLabel("model", d.Message.Source.Model)
	if u, ok := usage(d.Usage, d.Message.Source.Model, b.Src()); ok {
		b.Add("usage", e.Time, u)
	}
}

// canCarry reports whether data is an object without a "source" key of
// its own: withSource can add one.
func canCarry(data json.RawMessage) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil || probe == nil {
		return false
	}
	_, taken := probe[importer.SourceKey]
	return !taken
}

// withSource adds "source" to the object data, which canCarry accepts.
func withSource(data json.RawMessage, src importer.Obj) json.RawMessage {
	d, err := importer.Marshal(data)
	if err != nil {
		return data
	}
	sb, err := importer.Marshal(src)
	if err != nil {
		return data
	}
	if string(d) == "{}" {
		return json.RawMessage(`{"source":` + string(sb) + `}`)
	}
	out := append([]byte{}, d[:len(d)-1]...)
	out = append(out, `,"source":`...)
	out = append(out, sb...)
	return append(out, '}')
}

// usage maps a dsh message's usage onto docs/format.md §8's: dsh counts cache reads
// (and writes) apart from inputTokens, §8 counts them in it, cachedTokens
// being the reads. ok is false without both token counts, or with a count
// negative or a sum beyond int64.
func usage(raw json.RawMessage, model string, src importer.Obj) (importer.Obj, bool) {
	var u struct {
		InputTokens      *int64 `json:"inputTokens"`
		OutputTokens     *int64 `json:"outputTokens"`
		CacheReadTokens  int64  `json:"cacheReadTokens"`
		CacheWriteTokens int64  `json:"cacheWriteTokens"`
	}
	if json.Unmarshal(raw, &u) != nil || u.InputTokens == nil || u.OutputTokens == nil {
		return nil, false
	}
	in, ok := importer.Tokens(*u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if !ok || *u.OutputTokens < 0 {
		return nil, false
	}
	return importer.Obj{
		"inputTokens", in,
		"outputTokens", *u.OutputTokens,
		"cachedTokens", importer.OptInt(u.CacheReadTokens),
		"model", importer.Opt(model),
		"source", src,
	}, true
}
