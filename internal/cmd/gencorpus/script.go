package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// Steps between event times, in milliseconds: a streamed chunk comes fast,
// anything else takes a while.
const (
	stepMs  = 150
	chunkMs = 12
)

// script writes one session through a write handle with explicit times.
// The first error sticks and makes every later call a no-op, so a fixture
// reads as the list of its events; err reports it.
type script struct {
	ctx context.Context
	h   handle.Handle
	t   int64 // the time of the next event, Unix ms
	err error
}

// ev is an event to append: a type and its data as JSON text ("" for none).
type ev struct{ typ, data string }

// event makes the next event, timed step after the previous one.
func (s *script) event(e ev, step int64) eventlog.Event {
	out := eventlog.Event{Type: e.typ, Time: s.t}
	if e.data != "" {
		out.Data = json.RawMessage(e.data)
	}
	s.t += step
	return out
}

// add appends events one batch each: runs of a packed type in one call
// would be packed, which chunks does on purpose.
func (s *script) add(evs ...ev) {
	for _, e := range evs {
		s.append(s.event(e, stepMs))
	}
}

// batch appends evs in one call (a run of a packed type becomes one row).
func (s *script) batch(evs ...ev) {
	var out []eventlog.Event
	for _, e := range evs {
		out = append(out, s.event(e, chunkMs))
	}
	s.append(out...)
}

// chunks appends a streamed run of assistant/chunk events in one call, so
// the writer packs them into one row.
func (s *script) chunks(texts ...string) { s.run("assistant/chunk", texts...) }

// run appends a run of events of one type, each {"text":…}, in one call.
func (s *script) run(typ string, texts ...string) {
	evs := make([]ev, len(texts))
	for i, t := range texts {
		evs[i] = ev{typ, text(t)}
	}
	s.batch(evs...)
}

func (s *script) append(evs ...eventlog.Event) {
	if s.err != nil {
		return
	}
	_, s.err = s.h.Append(s.ctx, evs...)
}

// flush makes what was appended durable: one zstd frame per flush.
func (s *script) flush() {
	if s.err == nil {
		s.err = s.h.Flush(s.ctx)
	}
}

// seq is the seq of the last event appended.
func (s *script) seq() int64 { return s.h.Seq() }

// clock returns the time of the next event and moves it on, for the
// checkpoint and recorder helpers that time their own events.
func (s *script) clock() func() time.Time {
	return func() time.Time {
		t := time.UnixMilli(s.t)
		s.t += stepMs
		return t
	}
}

// checkpoint appends a checkpoint labelled label ("" for none); withState
// adds the agent/v1 state digest, rebuilt by replay.
func (s *script) checkpoint(label string, withState bool) {
	if s.err != nil {
		return
	}
	opts := []checkpoint.Option{checkpoint.WithClock(s.clock())}
	if label != "" {
		opts = append(opts, checkpoint.WithLabel(label))
	}
	if withState {
		agent := projection.NewAgent()
		if _, s.err = replay.Replay(s.ctx, s.h, []projection.Projection{agent}); s.err != nil {
			return
		}
		opts = append(opts, checkpoint.WithState(agent))
	}
	_, s.err = checkpoint.Create(s.ctx, s.h, opts...)
}

// rollback appends a rollback to seq to, with a reason.
func (s *script) rollback(to int64, reason string) {
	if s.err == nil {
		_, s.err = checkpoint.Rollback(s.ctx, s.h, to, checkpoint.WithReason(reason), checkpoint.WithClock(s.clock()))
	}
}

// rollbackTo appends a rollback to the latest checkpoint labelled label.
func (s *script) rollbackTo(label, reason string) {
	if s.err == nil {
		_, s.err = checkpoint.RollbackTo(s.ctx, s.h, label, checkpoint.WithLabel("undo"),
			checkpoint.WithReason(reason), checkpoint.WithClock(s.clock()))
	}
}

// close flushes and closes the handle.
func (s *script) close() error {
	if err := s.h.Close(); s.err == nil {
		s.err = err
	}
	if s.err != nil {
		return fmt.Errorf("%s: %w", s.h.Path(), s.err)
	}
	return nil
}

// text is {"text":t}.
func text(t string) string { return obj("text", t) }

// obj builds a JSON object from key, value pairs (values marshalled).
func obj(kv ...any) string {
	b := []byte{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(kv[i])
		v, err := json.Marshal(kv[i+1])
		if err != nil {
			panic(err) // a fixture literal that is not JSON: a bug in this program
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return string(append(b, '}'))
}
