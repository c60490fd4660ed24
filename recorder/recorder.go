package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
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
}

// Recorder records an agent loop's events through a write handle. It keeps
// the agent/v1 projection current as it appends, so its checkpoints carry a
// state digest computed by the same code verify uses. Its methods are safe
// for concurrent use, but the handle must be written through the Recorder
// alone, or its projection would miss events.
type Recorder struct {
	mu    sync.Mutex
	h     Handle
	agent *projection.Agent
	cfg   config
}

type config struct {
	now            func() time.Time
	autoCheckpoint bool
	cache          replay.Cache
}

// Option configures a Recorder.
type Option func(*config)

// WithClock sets the clock that times events.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutAutoCheckpoint turns off the checkpoint at the end of every turn.
func WithoutAutoCheckpoint() Option { return func(c *config) { c.autoCheckpoint = false } }

// WithCache lets New start its replay from a stored state.
func WithCache(cache replay.Cache) Option { return func(c *config) { c.cache = cache } }

// New returns a Recorder on h, its agent state rebuilt by replay.
func New(ctx context.Context, h Handle, opts ...Option) (*Recorder, error) {
	cfg := config{now: time.Now, autoCheckpoint: true}
	for _, o := range opts {
		o(&cfg)
	}
	agent := projection.NewAgent()
	ropts := []replay.Option{}
	if cfg.cache != nil {
		ropts = append(ropts, replay.WithCache(cfg.cache))
	}
	if _, err := replay.Replay(ctx, h, []projection.Projection{agent}, ropts...); err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	return &Recorder{h: h, agent: agent, cfg: cfg}, nil
}

// State returns the agent/v1 state after the last event recorded.
func (r *Recorder) State() projection.AgentState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agent.State()
}

// record appends one event, applies it to the agent state and, when
// flush is set, makes everything so far durable.
func (r *Recorder) record(ctx context.Context, typ string, data any, flush bool) (int64, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("recorder: %s: %w", typ, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := eventlog.Event{Type: typ, Time: r.cfg.now().UnixMilli(), Data: raw}
	seq, err := r.h.Append(ctx, e)
	if err != nil {
		return 0, err
	}
	e.Seq = seq
	r.agent.Apply(e)
	if flush {
		if err := r.h.Flush(ctx); err != nil {
			return seq, err
		}
	}
	return seq, nil
}

// Flush makes every event recorded so far durable.
func (r *Recorder) Flush(ctx context.Context) error { return r.h.Flush(ctx) }

type object = map[string]any

func withOpt(m object, key string, v any, set bool) object {
	if set {
		m[key] = v
	}
	return m
}

// BeginTurn records turn/start; input, when not nil, is recorded as its
// "input".
func (r *Recorder) BeginTurn(ctx context.Context, input any) (int64, error) {
	return r.record(ctx, "turn/start", withOpt(object{}, "input", input, input != nil), false)
}

// UserMessage records user/message; slot may be "".
func (r *Recorder) UserMessage(ctx context.Context, text, slot string) (int64, error) {
	return r.record(ctx, "user/message", withOpt(object{"text": text}, "slot", slot, slot != ""), false)
}

// BeginStep records step/start and flushes: the request is durable before
// the model is called.
func (r *Recorder) BeginStep(ctx context.Context) (int64, error) {
	return r.record(ctx, "step/start", object{}, true)
}

// Chunk records a streamed assistant/chunk. It is cheap: not flushed, and
// runs of chunks are packed into one row when flushed.
func (r *Recorder) Chunk(ctx context.Context, text string) (int64, error) {
	return r.record(ctx, "assistant/chunk", object{"text": text}, false)
}

// Reasoning records assistant/reasoning; signature may be "".
func (r *Recorder) Reasoning(ctx context.Context, text, signature string) (int64, error) {
	return r.record(ctx, "assistant/reasoning", withOpt(object{"text": text}, "signature", signature, signature != ""), false)
}

// AssistantMessage records assistant/message; slot may be "".
func (r *Recorder) AssistantMessage(ctx context.Context, text, slot string) (int64, error) {
	return r.record(ctx, "assistant/message", withOpt(object{"text": text}, "slot", slot, slot != ""), false)
}

// Call is a tool call.
type Call struct {
	ID     string
	Name   string
	Args   json.RawMessage
	Effect string // "read", "write" or "" (unknown)
}

// ToolCall records tool/call and flushes: the call is durable before the
// tool runs or approval is asked.
func (r *Recorder) ToolCall(ctx context.Context, c Call) (int64, error) {
	args := c.Args
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	return r.record(ctx, "tool/call", withOpt(object{"id": c.ID, "name": c.Name, "args": args}, "effect", c.Effect, c.Effect != ""), true)
}

// ToolApproval records tool/approval ("approved" or "denied") and flushes:
// the decision is durable before the tool runs.
func (r *Recorder) ToolApproval(ctx context.Context, id, decision, by string) (int64, error) {
	return r.record(ctx, "tool/approval", withOpt(object{"id": id, "decision": decision}, "by", by, by != ""), true)
}

// Result is a tool's result.
type Result struct {
	ID     string
	Output any    // recorded as "output" when not nil
	Error  string // recorded as "error" when not ""
}

// ToolResult records tool/result. It is made durable at the step's end.
func (r *Recorder) ToolResult(ctx context.Context, res Result) (int64, error) {
	m := withOpt(object{"id": res.ID}, "output", res.Output, res.Output != nil)
	return r.record(ctx, "tool/result", withOpt(m, "error", res.Error, res.Error != ""), false)
}

// Usage is what a model call cost.
type Usage struct {
	InputTokens  int64  `json:"inputTokens"`
	OutputTokens int64  `json:"outputTokens"`
	CachedTokens int64  `json:"cachedTokens,omitempty"`
	CostMicros   int64  `json:"costMicros,omitempty"`
	Model        string `json:"model,omitempty"`
}

// Usage records usage.
func (r *Recorder) Usage(ctx context.Context, u Usage) (int64, error) {
	return r.record(ctx, "usage", u, false)
}

// EndStep records step/end and flushes: a step's results are durable at
// its end.
func (r *Recorder) EndStep(ctx context.Context) (int64, error) {
	return r.record(ctx, "step/end", object{}, true)
}

// EndTurn records turn/end with a stop kind (Completed, Interrupted, …)
// and flushes, then takes a checkpoint (unless WithoutAutoCheckpoint):
// the only place a checkpoint is taken automatically.
func (r *Recorder) EndTurn(ctx context.Context, kind, reason string) (int64, error) {
	seq, err := r.record(ctx, "turn/end", withOpt(object{"kind": kind}, "reason", reason, reason != ""), true)
	if err != nil || !r.cfg.autoCheckpoint {
		return seq, err
	}
	_, err = r.Checkpoint(ctx, fmt.Sprintf("turn-%d", r.State().Turns))
	return seq, err
}

// Checkpoint appends a checkpoint with the agent/v1 state digest and
// flushes it. It is refused with ErrMidTurn while a turn is open.
func (r *Recorder) Checkpoint(ctx context.Context, label string) (checkpoint.Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.agent.State().TurnOpen {
		return checkpoint.Info{}, ErrMidTurn
	}
	return checkpoint.Create(ctx, r.h, checkpoint.WithLabel(label), checkpoint.WithState(r.agent), checkpoint.WithClock(r.cfg.now))
}

// MemorySet records memory/set; metadata may be nil.
func (r *Recorder) MemorySet(ctx context.Context, key string, value, metadata any) (int64, error) {
	return r.record(ctx, "memory/set", withOpt(object{"key": key, "value": value}, "metadata", metadata, metadata != nil), false)
}

// MemoryDelete records memory/delete.
func (r *Recorder) MemoryDelete(ctx context.Context, key string) (int64, error) {
	return r.record(ctx, "memory/delete", object{"key": key}, false)
}

// SetPlan records plan/set.
func (r *Recorder) SetPlan(ctx context.Context, plan any) (int64, error) {
	return r.record(ctx, "plan/set", object{"plan": plan}, false)
}

// Compacted records context/compacted: the transcript's earlier messages
// are replaced by the summary.
func (r *Recorder) Compacted(ctx context.Context, summary string) (int64, error) {
	return r.record(ctx, "context/compacted", object{"summary": summary}, false)
}

// SwitchSlot records slot/switch.
func (r *Recorder) SwitchSlot(ctx context.Context, slot string) (int64, error) {
	return r.record(ctx, "slot/switch", object{"slot": slot}, false)
}

// ProviderState records provider/state.
func (r *Recorder) ProviderState(ctx context.Context, provider string, state any) (int64, error) {
	return r.record(ctx, "provider/state", object{"provider": provider, "state": state}, false)
}
