package scrub

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/secrets/redact"
)

// TypeRewrite is the type of the event a redaction appends.
const TypeRewrite = "redact/rewrite"

// Record is the data of a redact/rewrite event: what a redaction of the
// log changed, so that a holder of the log before can check it (Check).
type Record struct {
	// Before is the log digest (docs/format.md §6) of the log before, all
	// of its events (a fork's inherited ones included); Events is how
	// many they were.
	Before string `json:"before"`
	Events int64  `json:"events"`
	// Detectors names the table of detectors (redact.DetectorsVersion);
	// Patterns are the extra ones, in order.
	Detectors string    `json:"detectors"`
	Patterns  []Pattern `json:"patterns,omitempty"`
	// Redacted lists the events of the session's own rows (from seq
	// From; a fork's inherited events are its parent's to record) whose
	// data changed, in seq order, with the kinds replaced in each.
	From     int64      `json:"from"`
	Redacted []Redacted `json:"redacted"`
}

// Pattern is an extra detector: its kind and regular expression.
type Pattern struct {
	Kind string `json:"kind"`
	RE   string `json:"re"`
}

// Redacted is an event whose data a redaction changed.
type Redacted struct {
	Seq   int64    `json:"seq"`
	Kinds []string `json:"kinds"`
}

// Result is what Session did to one session.
type Result struct {
	ID string `json:"id"`
	// Seq is the seq of the redact/rewrite event appended.
	Seq    int64  `json:"seq"`
	Record Record `json:"record"`
}

type config struct {
	patterns    []Pattern
	res         []*regexp.Regexp
	descendants bool
	now         func() time.Time
}

// Option configures Session.
type Option func(*config)

// WithPattern adds a detector: every match of re in a string of event
// data is redacted as kind (redact.WithPattern).
func WithPattern(kind string, re *regexp.Regexp) Option {
	return func(c *config) {
		c.patterns = append(c.patterns, Pattern{Kind: kind, RE: re.String()})
		c.res = append(c.res, re)
	}
}

// WithDescendants redacts the session's forks and children too, and
// theirs, parents first: a fork's checkpoints cover its parent's events,
// which change.
func WithDescendants() Option { return func(c *config) { c.descendants = true } }

// WithClock sets the clock of the redact/rewrite event's time.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// redactorOf returns the redactor of the built-in detectors and
// patterns.
func redactorOf(patterns []Pattern) (*redact.Redactor, error) {
	var opts []redact.Option
	for _, p := range patterns {
		if err := redact.ValidKind(p.Kind); err != nil {
			return nil, err
		}
		re, err := regexp.Compile(p.RE)
		if err != nil {
			return nil, fmt.Errorf("scrub: pattern %q: %w", p.RE, err)
		}
		opts = append(opts, redact.WithPattern(p.Kind, re))
	}
	return redact.New(opts...), nil
}

// Session redacts session id of st (see the package doc) and returns
// what it did, one Result per session rewritten (id first). A session
// that forks depend on is refused with a *handle.DependentsError unless
// WithDescendants. Each rewrite is atomic; with descendants, a failure
// leaves those rewritten before it rewritten.
func Session(ctx context.Context, st handle.Store, id string, opts ...Option) ([]Result, error) {
	c := config{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	red, err := redactorOf(c.patterns)
	if err != nil {
		return nil, err
	}
	order := []string{id}
	for i := 0; i < len(order); i++ {
		children, err := st.Children(ctx, order[i])
		if err != nil {
			return nil, err
		}
		var forks []string
		for _, h := range children {
			if h.Parent.Mode == eventlog.ModeFork {
				forks = append(forks, h.ID)
			}
			if c.descendants {
				order = append(order, h.ID)
			}
		}
		if len(forks) > 0 && !c.descendants {
			return nil, &handle.DependentsError{ID: order[i], Dependents: forks, Op: "redact",
				Fix: "their checkpoints cover its events: redact them too (WithDescendants, logtool redact --with-children)"}
		}
	}
	// The digests of the logs before, all taken before any is rewritten:
	// a fork's covers its parent's events as they were.
	before := map[string][2]any{}
	for _, s := range order {
		h, err := st.Open(ctx, s, handle.ReadOnly)
		if err != nil {
			return nil, err
		}
		d, next, err := h.LogDigest(ctx)
		h.Close()
		if err != nil {
			return nil, err
		}
		before[s] = [2]any{d, next}
	}
	var out []Result
	for _, s := range order {
		rec := Record{Before: before[s][0].(string), Events: before[s][1].(int64), Detectors: redact.DetectorsVersion,
			Patterns: c.patterns, Redacted: []Redacted{}}
		var seq int64
		_, err := st.Rewrite(ctx, s, func(h handle.Handle) iter.Seq2[eventlog.Event, error] {
			return rows(ctx, h, red, &rec, &seq, c.now)
		})
		if err != nil {
			return out, fmt.Errorf("scrub: %s: %w", s, err)
		}
		out = append(out, Result{ID: s, Seq: seq, Record: rec})
	}
	return out, nil
}

// rows yields the new rows of the session h reads: its own events
// redacted by red, checkpoints with their digests recomputed over the new
// log, then the redact/rewrite event of rec (its seq in *seq).
func rows(ctx context.Context, h handle.Handle, red *redact.Redactor, rec *Record, seq *int64, now func() time.Time) iter.Seq2[eventlog.Event, error] {
	return func(yield func(eventlog.Event, error) bool) {
		first := h.Header().FirstSeq()
		rec.From = first
		d := eventlog.NewDigest()
		view := &redacted{h: h, red: red}
		cache := memCache{}
		next := int64(0)
		for e, err := range h.Read(ctx, 0, rec.Events-1) {
			if err == nil && e.Seq != next {
				err = fmt.Errorf("scrub: event %d where %d was expected", e.Seq, next)
			}
			if err != nil {
				yield(eventlog.Event{}, err)
				return
			}
			next++
			if e.Seq >= first {
				var kinds []string
				if e, kinds, err = rewritten(ctx, e, red, d, view, cache); err != nil {
					yield(eventlog.Event{}, err)
					return
				}
				if len(kinds) > 0 {
					rec.Redacted = append(rec.Redacted, Redacted{Seq: e.Seq, Kinds: kinds})
				}
			}
			d.Add(e)
			if e.Seq >= first && !yield(e, nil) {
				return
			}
		}
		if next != rec.Events {
			yield(eventlog.Event{}, fmt.Errorf("scrub: the log ends at seq %d, before %d", next-1, rec.Events-1))
			return
		}
		data, err := json.Marshal(rec)
		if err != nil {
			yield(eventlog.Event{}, err)
			return
		}
		*seq = next
		yield(eventlog.Event{Seq: next, Type: TypeRewrite, Time: now().UnixMilli(), Data: data}, nil)
	}
}

// rewritten returns the new event of the session's own event e, the
// kinds redacted in it; d is the digest of the new log before e. A
// checkpoint keeps its place and label (redacted), with its log digest
// recomputed and its state digest too when it names a projection replay
// knows (else it is dropped).
func rewritten(ctx context.Context, e eventlog.Event, red *redact.Redactor, d *eventlog.Digest, view *redacted, cache memCache) (eventlog.Event, []string, error) {
	if e.Type != eventlog.TypeCheckpoint {
		data, kinds, _ := red.Redact(e.Data)
		e.Data = data
		return e, kinds, nil
	}
	cp, err := eventlog.ParseCheckpoint(e.Data)
	if err != nil {
		return e, nil, err
	}
	label, kinds := redactString(red, cp.Label)
	out := eventlog.CheckpointData{Log: d.String(), Label: label}
	if cp.State != nil {
		for _, p := range projection.Verifiable() {
			if projection.ID(p) != cp.State.Projection {
				continue
			}
			if _, err := replay.Replay(ctx, view, []projection.Projection{p}, replay.UpTo(e.Seq-1), replay.WithCache(cache)); err != nil {
				return e, nil, fmt.Errorf("scrub: the state at checkpoint %d: %w", e.Seq, err)
			}
			sd, err := projection.StateDigest(p)
			if err != nil {
				return e, nil, err
			}
			out.State = &eventlog.StateRef{Projection: cp.State.Projection, Digest: sd}
		}
	}
	if e.Data, err = json.Marshal(out); err != nil {
		return e, nil, err
	}
	return e, kinds, nil
}

// redactString returns s redacted as a JSON string of data is, and the
// kinds redacted.
func redactString(red *redact.Redactor, s string) (string, []string) {
	b, _ := json.Marshal(s)
	out, kinds, ok := red.Redact(b)
	if !ok {
		return s, nil
	}
	var r string
	if json.Unmarshal(out, &r) != nil {
		return s, nil
	}
	return r, kinds
}

// redacted is the session h reads as it will be once redacted, for
// replay: its own events' data redacted (checkpoints change no state, so
// theirs are left).
type redacted struct {
	h   handle.Handle
	red *redact.Redactor
}

func (v *redacted) ID() string { return v.h.ID() }
func (v *redacted) Seq() int64 { return v.h.Seq() }
func (v *redacted) Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error] {
	first := v.h.Header().FirstSeq()
	return func(yield func(eventlog.Event, error) bool) {
		for e, err := range v.h.Read(ctx, from, to) {
			if err == nil && e.Seq >= first && e.Type != eventlog.TypeCheckpoint {
				e.Data, _ = v.red.Data(e.Data)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// memCache keeps replay's states in memory, for the replays of one
// rewrite (one per checkpoint with a state): each starts from the state
// the one before kept.
type memCache map[string][]byte

func (m memCache) GetDerived(_ context.Context, id, key string) ([]byte, error) {
	b, ok := m[id+"/"+key]
	if !ok {
		return nil, handle.ErrNotFound
	}
	return b, nil
}

func (m memCache) PutDerived(_ context.Context, id, key string, data []byte) error {
	m[id+"/"+key] = data
	return nil
}

func (m memCache) DeleteDerived(_ context.Context, id, key string) error {
	delete(m, id+"/"+key)
	return nil
}
