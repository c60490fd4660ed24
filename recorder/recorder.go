package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// ErrMidTurn: a checkpoint asked for while a turn is open. Checkpoints are
// taken only at turn boundaries, so that a client that disconnects
// mid-stream leaves no half-turn checkpoint behind.
var ErrMidTurn = errors.New("recorder: a turn is open: checkpoints are taken at turn boundaries")

// Handle is what a Recorder writes through (handle.Handle is one).
type Handle interface {
	Writer
	Append(ctx context.Context, events ...eventlog.Event) (int64, error)
	LogDigest(ctx context.Context) (string, int64, error)
	DurableSeq() int64
	Close() error
}

// Recorder records an agent loop's events through a write handle. It keeps
// the agent/v1 projection current as it appends, so its checkpoints carry a
// state digest computed by the same code verify uses.
//
// The Recorder's state is the state replay of the handle's log gives, by
// construction: before it records, checkpoints or answers State, it
// compares the handle's last seq with the last event it applied, and
// applies whatever else was written through the handle in between (by
// Resume, checkpoint.Rollback, a plain Append, another Recorder), read
// back from the handle; a rollback among them makes it rebuild its state
// by replay. Its own appends are conditional (AppendAt the seq after the
// last event it applied), so a concurrent writer on the same handle can
// never slip an event between the state it took and the event it writes.
// Checking costs one comparison per call when the Recorder is the only
// writer (see docs/design.md).
//
// Each recording method's doc says whether it is durable when it returns:
// "Durable when it returns" means that once it returns nil, its event and
// every event before it survive a kill or a power cut (the handle's Flush
// returned); "not durable when it returns" means that its event is in the
// log (its seq assigned, this handle reads it) and becomes durable with
// the next durable call, Flush or Close: a crash before that loses it
// (Resume then closes the turn). DurableSeq says how far the log is
// durable. The durable calls are the loop's points of no return: before
// the model is called, before a tool runs, at a step's and a turn's end.
//
// Its methods are safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	h      Handle
	agent  *projection.Agent
	stream *stream
	steps  *steps
	next   int64 // the seq after the last event applied
	cfg    config
}

type config struct {
	now            func() time.Time
	autoCheckpoint bool
	cache          replay.Cache
	forkLabels     map[string]string
}

// Option configures a Recorder.
type Option func(*config)

// WithClock sets the clock that times events.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutAutoCheckpoint turns off the checkpoint at the end of every turn.
func WithoutAutoCheckpoint() Option { return func(c *config) { c.autoCheckpoint = false } }

// WithCache lets the Recorder start its replays (at New, and after a
// rollback) from a stored state.
func WithCache(cache replay.Cache) Option { return func(c *config) { c.cache = cache } }

// WithForkLabels sets the labels of the session Fork creates (its own:
// a fork has none otherwise). Only Fork reads it, and the fork's Recorder
// does not keep it: a fork of the fork has labels only when asked again.
func WithForkLabels(labels map[string]string) Option {
	return func(c *config) { c.forkLabels = maps.Clone(labels) }
}

// New returns a Recorder on h, its agent state rebuilt by replay.
func New(ctx context.Context, h Handle, opts ...Option) (*Recorder, error) {
	cfg := config{now: time.Now, autoCheckpoint: true}
	for _, o := range opts {
		o(&cfg)
	}
	r := &Recorder{h: h, cfg: cfg}
	if err := r.rebuild(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// State returns the agent/v1 state after the last event of the log,
// whoever wrote it.
func (r *Recorder) State() projection.AgentState {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A failed catch-up leaves the state of the last event applied; the
	// next call that writes returns the error.
	_ = r.catchUp(context.Background())
	return r.agent.State()
}

// Handle returns the handle the Recorder writes through.
func (r *Recorder) Handle() Handle { return r.h }

// Close flushes and closes the Recorder's handle. Durable when it returns.
func (r *Recorder) Close() error { return r.h.Close() }

// DurableSeq returns the last seq that is durable: covered by a flush that
// returned (the handle's DurableSeq). A seq a recording method returned is
// durable once DurableSeq is at least that seq.
func (r *Recorder) DurableSeq() int64 { return r.h.DurableSeq() }

// rebuild replays the log into fresh projections, up to the handle's last
// seq.
func (r *Recorder) rebuild(ctx context.Context) error {
	agent, st, sp := projection.NewAgent(), &stream{}, newSteps()
	last := r.h.Seq()
	ropts := []replay.Option{replay.UpTo(last)}
	if r.cfg.cache != nil {
		ropts = append(ropts, replay.WithCache(r.cfg.cache))
	}
	if _, err := replay.Replay(ctx, r.h, []projection.Projection{agent, st, sp}, ropts...); err != nil {
		return fmt.Errorf("recorder: %w", err)
	}
	r.agent, r.stream, r.steps, r.next = agent, st, sp, last+1
	return nil
}

// catchUp applies the events written through the handle since the last
// one the Recorder applied. Called with mu held.
func (r *Recorder) catchUp(ctx context.Context) error {
	last := r.h.Seq()
	if last < r.next {
		return nil
	}
	for e, err := range r.h.Read(ctx, r.next, last) {
		if err != nil {
			return fmt.Errorf("recorder: catching up with the log: %w", err)
		}
		if e.Type == eventlog.TypeRollback {
			// Which state the log returns to is the replay engine's
			// business: rebuild (from a stored state, with WithCache).
			return r.rebuild(ctx)
		}
		r.apply(e)
	}
	return nil
}

// apply folds one event into the Recorder's projections, as the replay
// engine would (a checkpoint changes no state).
func (r *Recorder) apply(e eventlog.Event) {
	if e.Type != eventlog.TypeCheckpoint {
		r.agent.Apply(e)
		r.stream.Apply(e)
		r.steps.Apply(e)
	}
	r.next = e.Seq + 1
}

// appendLocked appends events right after the last event applied, catching
// up first and again whenever another writer got in between, and applies
// them. build makes the events from the caught-up state; nil events means
// nothing to append. Called with mu held.
func (r *Recorder) appendLocked(ctx context.Context, build func() ([]eventlog.Event, error)) (int64, []eventlog.Event, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		if err := r.catchUp(ctx); err != nil {
			return 0, nil, err
		}
		evs, err := build()
		if err != nil || len(evs) == 0 {
			return r.next - 1, nil, err
		}
		last, err := r.h.AppendAt(ctx, r.next, evs...)
		if errors.As(err, new(*handle.ConflictError)) {
			continue // another writer got in: catch up and build again
		}
		if err != nil {
			return 0, nil, err
		}
		for i := range evs {
			evs[i].Seq = last - int64(len(evs)-1-i)
		}
		// What is applied is what the log holds, read back, not what was
		// built: the handle redacts what it stores (docs/format.md §11),
		// and the state must be replay's. The events are the writer's
		// newest, read from its memory. A failed read leaves them to the
		// next catch-up.
		_ = r.catchUp(ctx)
		return last, evs, nil
	}
}

// record appends one event, applies it to the agent state and, when
// flush is set, makes everything so far durable. Before a tool call or a
// step's end it first records the step's streamed text as its
// assistant/message when the caller recorded none.
func (r *Recorder) record(ctx context.Context, typ string, data any, flush bool) (int64, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("recorder: %s: %w", typ, err)
	}
	return r.recordBatch(ctx, flush, func(now int64) ([]eventlog.Event, error) {
		e := eventlog.Event{Type: typ, Time: now, Data: raw}
		if typ != "tool/call" && typ != "step/end" {
			return []eventlog.Event{e}, nil
		}
		msg, ok, err := r.streamedMessage(now, "")
		if err != nil || !ok {
			return []eventlog.Event{e}, err
		}
		return []eventlog.Event{msg, e}, nil
	})
}

// recordBatch appends the events build makes from the caught-up state
// (now is their time) in one batch, applies them and, when flush is set,
// makes everything so far durable. It returns the last one's seq.
func (r *Recorder) recordBatch(ctx context.Context, flush bool, build func(now int64) ([]eventlog.Event, error)) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, _, err := r.appendLocked(ctx, func() ([]eventlog.Event, error) { return build(r.cfg.now().UnixMilli()) })
	if err != nil {
		return 0, err
	}
	if flush {
		if err := r.h.Flush(ctx); err != nil {
			return seq, err
		}
	}
	return seq, nil
}

// streamedMessage returns the open step's streamed text as its
// assistant/message, when the step has one to record (docs/format.md §8,
// "Streamed text"). Called with mu held.
func (r *Recorder) streamedMessage(now int64, slot string) (eventlog.Event, bool, error) {
	text, ok := r.stream.pending()
	if !ok {
		return eventlog.Event{}, false, nil
	}
	msg, err := json.Marshal(withOpt(object{"text": text}, "slot", slot, slot != ""))
	if err != nil {
		return eventlog.Event{}, false, err
	}
	return eventlog.Event{Type: "assistant/message", Time: now, Data: msg}, true, nil
}

// Flush makes every event recorded so far durable. Durable when it
// returns.
func (r *Recorder) Flush(ctx context.Context) error { return r.h.Flush(ctx) }

type object = map[string]any

func withOpt(m object, key string, v any, set bool) object {
	if set {
		m[key] = v
	}
	return m
}

// BeginTurn records turn/start; input, when not nil, is recorded as its
// "input". Not durable when it returns: BeginStep makes it durable.
func (r *Recorder) BeginTurn(ctx context.Context, input any) (int64, error) {
	return r.record(ctx, "turn/start", withOpt(object{}, "input", input, input != nil), false)
}

// UserMessage records user/message; slot may be "". Not durable when it
// returns: BeginStep makes it durable, before the model sees it.
func (r *Recorder) UserMessage(ctx context.Context, text, slot string) (int64, error) {
	return r.record(ctx, "user/message", withOpt(object{"text": text}, "slot", slot, slot != ""), false)
}

// BeginStep records step/start and flushes: the request is durable before
// the model is called. Durable when it returns.
func (r *Recorder) BeginStep(ctx context.Context) (int64, error) {
	return r.record(ctx, "step/start", object{}, true)
}

// Chunk records a streamed assistant/chunk. It is cheap: not flushed, and
// runs of chunks are packed into one row when flushed. Not durable when it
// returns: the step's next ToolCall or its EndStep makes it durable (and
// records the joined text as the step's assistant/message if the caller
// recorded none).
func (r *Recorder) Chunk(ctx context.Context, text string) (int64, error) {
	return r.record(ctx, "assistant/chunk", object{"text": text}, false)
}

// Reasoning records assistant/reasoning; signature may be "". Not durable
// when it returns.
func (r *Recorder) Reasoning(ctx context.Context, text, signature string) (int64, error) {
	return r.record(ctx, "assistant/reasoning", withOpt(object{"text": text}, "signature", signature, signature != ""), false)
}

// AssistantMessage records assistant/message; slot may be "". Not durable
// when it returns: the step's next ToolCall or its EndStep makes it
// durable.
func (r *Recorder) AssistantMessage(ctx context.Context, text, slot string) (int64, error) {
	return r.record(ctx, "assistant/message", withOpt(object{"text": text}, "slot", slot, slot != ""), false)
}

// Call is a tool call.
type Call struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Effect string          `json:"effect,omitempty"` // "read", "write" or "" (unknown)
}

// data is the call's tool/call data.
func (c Call) data() object {
	args := c.Args
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	return withOpt(object{"id": c.ID, "name": c.Name, "args": args}, "effect", c.Effect, c.Effect != "")
}

// ToolCall records tool/call and flushes: the call is durable before the
// tool runs or approval is asked. Durable when it returns.
//
// A crash between two ToolCalls of one response loses the later calls:
// Response records a response's calls in one flush.
func (r *Recorder) ToolCall(ctx context.Context, c Call) (int64, error) {
	return r.record(ctx, "tool/call", c.data(), true)
}

// ToolApproval records tool/approval ("approved" or "denied") and flushes:
// the decision is durable before the tool runs. Durable when it returns.
func (r *Recorder) ToolApproval(ctx context.Context, id, decision, by string) (int64, error) {
	return r.record(ctx, "tool/approval", withOpt(object{"id": id, "decision": decision}, "by", by, by != ""), true)
}

// Result is a tool's result.
type Result struct {
	ID     string
	Output any    // recorded as "output" when not nil
	Error  string // recorded as "error" when not ""
}

// ToolResult records tool/result. Not durable when it returns: EndStep
// makes the step's results durable together.
func (r *Recorder) ToolResult(ctx context.Context, res Result) (int64, error) {
	m := withOpt(object{"id": res.ID}, "output", res.Output, res.Output != nil)
	return r.record(ctx, "tool/result", withOpt(m, "error", res.Error, res.Error != ""), false)
}

// Usage is what a model call cost, with the provider's own fields
// (docs/format.md §8): CachedTokens are the input tokens read from the
// provider's prompt cache, CacheWriteTokens those written to it, and
// CacheWriteByTTL splits the written ones by how long the provider keeps
// them ("5m", "1h").
type Usage struct {
	InputTokens      int64            `json:"inputTokens"`
	OutputTokens     int64            `json:"outputTokens"`
	CachedTokens     int64            `json:"cachedTokens,omitempty"`
	CacheWriteTokens int64            `json:"cacheWriteTokens,omitempty"`
	CacheWriteByTTL  map[string]int64 `json:"cacheWriteByTTL,omitempty"`
	ServiceTier      string           `json:"serviceTier,omitempty"`
	CostMicros       int64            `json:"costMicros,omitempty"`
	Model            string           `json:"model,omitempty"`
}

// Usage records usage. Not durable when it returns.
func (r *Recorder) Usage(ctx context.Context, u Usage) (int64, error) {
	return r.record(ctx, "usage", u, false)
}

// EndStep records step/end and flushes: a step's results are durable at
// its end. Durable when it returns.
func (r *Recorder) EndStep(ctx context.Context) (int64, error) {
	return r.record(ctx, "step/end", object{}, true)
}

// Reasoning is one reasoning block of a response; Signature may be "".
type Reasoning struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// Response is one model response, whole: what the model thought, said
// and called in one model call, and why it stopped.
type Response struct {
	Reasoning []Reasoning
	// Text is the response's text. "" takes the step's streamed chunks
	// joined (Chunk); without chunks no assistant/message is recorded.
	Text string
	// Slot is the assistant/message's slot; may be "".
	Slot  string
	Calls []Call
	// Usage, when not nil, is recorded before the step's end.
	Usage *Usage
	// StopReason is why the model stopped, as the provider names it
	// ("end_turn", "tool_use", …); may be "".
	StopReason string
}

// Response records a model response whole and ends its step, in one
// batch and one flush: its assistant/reasoning events, its
// assistant/message, every tool/call, its usage and step/end
// {"stopReason"}. The step ends with its whole response, so that a crash
// leaves either all of it or a step without its end, which Resume asks
// again; its calls' approvals and results come after the step/end (the
// next BeginStep makes them durable, before the model sees them). It
// returns the seq of the step/end. Durable when it returns.
func (r *Recorder) Response(ctx context.Context, resp Response) (int64, error) {
	var datas []eventData
	add := func(typ string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("recorder: response: %s: %w", typ, err)
		}
		datas = append(datas, eventData{typ, raw})
		return nil
	}
	for _, rs := range resp.Reasoning {
		if err := add("assistant/reasoning", withOpt(object{"text": rs.Text}, "signature", rs.Signature, rs.Signature != "")); err != nil {
			return 0, err
		}
	}
	msgAt := len(datas) // the message comes after the reasoning
	if resp.Text != "" {
		if err := add("assistant/message", withOpt(object{"text": resp.Text}, "slot", resp.Slot, resp.Slot != "")); err != nil {
			return 0, err
		}
	}
	for _, c := range resp.Calls {
		if err := add("tool/call", c.data()); err != nil {
			return 0, err
		}
	}
	if resp.Usage != nil {
		if err := add("usage", resp.Usage); err != nil {
			return 0, err
		}
	}
	if err := add("step/end", withOpt(object{}, "stopReason", resp.StopReason, resp.StopReason != "")); err != nil {
		return 0, err
	}
	return r.recordBatch(ctx, true, func(now int64) ([]eventlog.Event, error) {
		evs := make([]eventlog.Event, 0, len(datas)+1)
		for i, d := range datas {
			if i == msgAt && resp.Text == "" {
				msg, ok, err := r.streamedMessage(now, resp.Slot)
				if err != nil {
					return nil, err
				}
				if ok {
					evs = append(evs, msg)
				}
			}
			evs = append(evs, eventlog.Event{Type: d.typ, Time: now, Data: d.raw})
		}
		return evs, nil
	})
}

// eventData is an event's type and data, before its time is known.
type eventData struct {
	typ string
	raw json.RawMessage
}

// EndTurn records turn/end with a stop kind (Completed, Interrupted, …)
// and flushes, then takes a checkpoint (unless WithoutAutoCheckpoint):
// the only place a checkpoint is taken automatically. Durable when it
// returns, the checkpoint too.
//
// The checkpoint is labelled "turn-N", N the number of turns on the live
// branch up to and including this one: the turn/start events that replay
// of the log counts (agent/v1's Turns), rollbacks applied, a fork's
// inherited turns included. After RollbackTo("turn-2") the next turn is
// turn 3 again, so two checkpoints may carry one label; RollbackTo takes
// the latest on the live branch, the one of the turn that is live.
func (r *Recorder) EndTurn(ctx context.Context, kind, reason string) (int64, error) {
	seq, err := r.record(ctx, "turn/end", withOpt(object{"kind": kind}, "reason", reason, reason != ""), true)
	if err != nil || !r.cfg.autoCheckpoint {
		return seq, err
	}
	_, err = r.Checkpoint(ctx, fmt.Sprintf("turn-%d", r.State().Turns))
	return seq, err
}

// Checkpoint appends a checkpoint with the agent/v1 state digest and
// flushes it. It is refused with ErrMidTurn while a turn is open. Durable
// when it returns.
func (r *Recorder) Checkpoint(ctx context.Context, label string) (checkpoint.Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if err := r.catchUp(ctx); err != nil {
			return checkpoint.Info{}, err
		}
		if r.agent.State().TurnOpen {
			return checkpoint.Info{}, ErrMidTurn
		}
		info, err := checkpoint.Create(ctx, r.h, checkpoint.WithLabel(label), checkpoint.WithState(r.agent),
			checkpoint.WithClock(r.cfg.now), checkpoint.At(r.next))
		if errors.As(err, new(*handle.ConflictError)) {
			if err := ctx.Err(); err != nil {
				return checkpoint.Info{}, err
			}
			continue // another writer got in: its events change the state
		}
		if err != nil {
			return checkpoint.Info{}, err
		}
		r.next = info.Seq + 1 // a checkpoint changes no state
		return info, nil
	}
}

// MemorySet records memory/set; metadata may be nil. Not durable when it
// returns.
func (r *Recorder) MemorySet(ctx context.Context, key string, value, metadata any) (int64, error) {
	return r.record(ctx, "memory/set", withOpt(object{"key": key, "value": value}, "metadata", metadata, metadata != nil), false)
}

// MemoryDelete records memory/delete. Not durable when it returns.
func (r *Recorder) MemoryDelete(ctx context.Context, key string) (int64, error) {
	return r.record(ctx, "memory/delete", object{"key": key}, false)
}

// SetPlan records plan/set. Not durable when it returns.
func (r *Recorder) SetPlan(ctx context.Context, plan any) (int64, error) {
	return r.record(ctx, "plan/set", object{"plan": plan}, false)
}

// Compacted records context/compacted: the transcript's earlier messages
// are replaced by the summary. Not durable when it returns.
func (r *Recorder) Compacted(ctx context.Context, summary string) (int64, error) {
	return r.record(ctx, "context/compacted", object{"summary": summary}, false)
}

// SwitchSlot records slot/switch. Not durable when it returns.
func (r *Recorder) SwitchSlot(ctx context.Context, slot string) (int64, error) {
	return r.record(ctx, "slot/switch", object{"slot": slot}, false)
}

// ProviderState records provider/state. Not durable when it returns.
func (r *Recorder) ProviderState(ctx context.Context, provider string, state any) (int64, error) {
	return r.record(ctx, "provider/state", object{"provider": provider, "state": state}, false)
}

// Rollback appends a rollback to seq to and flushes it (checkpoint.Rollback);
// the Recorder's state becomes the state right after event to. Durable
// when it returns.
func (r *Recorder) Rollback(ctx context.Context, to int64, opts ...checkpoint.Option) (int64, error) {
	return r.rollback(ctx, func() (int64, error) { return checkpoint.Rollback(ctx, r.h, to, opts...) })
}

// RollbackTo rolls back to the latest checkpoint labelled label on the live
// branch (checkpoint.RollbackTo). Durable when it returns.
func (r *Recorder) RollbackTo(ctx context.Context, label string, opts ...checkpoint.Option) (int64, error) {
	return r.rollback(ctx, func() (int64, error) { return checkpoint.RollbackTo(ctx, r.h, label, opts...) })
}

func (r *Recorder) rollback(ctx context.Context, do func() (int64, error)) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, err := do()
	if err != nil {
		return seq, err
	}
	// The catch-up meets the rollback and rebuilds the state.
	return seq, r.catchUp(ctx)
}

// Forker makes forks (handle.Store is one).
type Forker interface {
	Fork(ctx context.Context, id string, at int64, opts ...handle.Option) (handle.Handle, error)
}

// Fork flushes, forks the Recorder's session at seq at (its logical log is
// this one's events 0..at) and returns a Recorder on the fork's write
// handle, with the options of this one and then opts. The fork's labels
// are those WithForkLabels gives (rec.Fork(ctx, store, at,
// recorder.WithForkLabels(map[string]string{"agent": "coder"}))), none
// without it. Close the new Recorder (which closes its handle) when done
// with it. Durable when it returns: this log is flushed first, and the
// fork exists durably.
func (r *Recorder) Fork(ctx context.Context, s Forker, at int64, opts ...Option) (*Recorder, error) {
	if err := r.h.Flush(ctx); err != nil {
		return nil, err
	}
	cfg := r.cfg
	for _, o := range opts {
		o(&cfg)
	}
	var copts []handle.Option
	if cfg.forkLabels != nil {
		copts = append(copts, handle.WithLabels(cfg.forkLabels))
	}
	cfg.forkLabels = nil
	fh, err := s.Fork(ctx, r.h.ID(), at, copts...)
	if err != nil {
		return nil, fmt.Errorf("recorder: fork: %w", err)
	}
	f := &Recorder{h: fh, cfg: cfg}
	if err := f.rebuild(ctx); err != nil {
		fh.Close()
		return nil, err
	}
	return f, nil
}
