package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
)

// ErrNoCheckpoint: no checkpoint with that label on the live branch.
var ErrNoCheckpoint = errors.New("checkpoint: no such checkpoint on the live branch")

// Writer is what Create and Rollback need of a write handle
// (handle.Handle is one).
type Writer interface {
	Seq() int64
	LogDigest(ctx context.Context) (digest string, next int64, err error)
	AppendAt(ctx context.Context, expected int64, events ...eventlog.Event) (int64, error)
	Flush(ctx context.Context) error
}

// Reader is what List and Find need of a handle: the logical log.
type Reader interface {
	Read(ctx context.Context, from, to int64) iter.Seq2[eventlog.Event, error]
}

// Info describes a checkpoint event.
type Info struct {
	Seq   int64              `json:"seq"`
	Time  int64              `json:"time"`
	Label string             `json:"label,omitempty"`
	Log   string             `json:"log"`
	State *eventlog.StateRef `json:"state,omitempty"`
	// Live reports whether the checkpoint is on the live branch at the
	// end of the log (no later rollback abandoned it).
	Live bool `json:"live"`
}

type config struct {
	label, reason string
	state         projection.Projection
	now           func() time.Time
	at            int64 // Create's expected seq, -1: wherever the log is
}

// Option configures Create and Rollback.
type Option func(*config)

// WithLabel labels the checkpoint (or the rollback).
func WithLabel(label string) Option { return func(c *config) { c.label = label } }

// WithReason says why a rollback was made.
func WithReason(reason string) Option { return func(c *config) { c.reason = reason } }

// WithState adds p's state digest to the checkpoint. p must hold the state
// after every event before the checkpoint (the caller keeps it current as
// it appends, or rebuilds it with replay).
func WithState(p projection.Projection) Option { return func(c *config) { c.state = p } }

// At makes Create write its checkpoint at seq or not at all: when the
// log's next seq is another (something was appended after the caller took
// the state it passes to WithState), Create writes nothing and returns a
// *handle.ConflictError, so that a checkpoint never pairs a state with a
// log it was not taken from.
func At(seq int64) Option { return func(c *config) { c.at = seq } }

// WithClock sets the clock for the event's time.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

func newConfig(opts []Option) config {
	c := config{now: time.Now, at: -1}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// pathOf names w's log for errors, when w can say.
func pathOf(w Writer) string {
	if p, ok := w.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// Create appends a checkpoint covering every event appended before it and
// flushes it. Its log digest is the handle's running digest; with
// WithState, the projection's state digest is added. If another appender
// got in between (a *handle.ConflictError), nothing is written and the
// error is returned: the state given may no longer be the right one.
func Create(ctx context.Context, w Writer, opts ...Option) (Info, error) {
	c := newConfig(opts)
	digest, next, err := w.LogDigest(ctx)
	if err != nil {
		return Info{}, err
	}
	if c.at >= 0 && c.at != next {
		return Info{}, &handle.ConflictError{Path: pathOf(w), Expected: c.at, Next: next}
	}
	data := eventlog.CheckpointData{Log: digest, Label: c.label}
	if c.state != nil {
		sd, err := projection.StateDigest(c.state)
		if err != nil {
			return Info{}, err
		}
		data.State = &eventlog.StateRef{Projection: projection.ID(c.state), Digest: sd}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Info{}, err
	}
	e := eventlog.Event{Type: eventlog.TypeCheckpoint, Time: c.now().UnixMilli(), Data: raw}
	seq, err := w.AppendAt(ctx, next, e)
	if err != nil {
		return Info{}, err
	}
	if err := w.Flush(ctx); err != nil {
		return Info{}, err
	}
	return Info{Seq: seq, Time: e.Time, Label: c.label, Log: digest, State: data.State, Live: true}, nil
}

// Rollback appends a rollback to seq to and flushes it: from it on, every
// projection's state equals its state right after event to. The events in
// between stay in the log as an abandoned branch.
func Rollback(ctx context.Context, w Writer, to int64, opts ...Option) (int64, error) {
	c := newConfig(opts)
	next := w.Seq() + 1
	raw, err := json.Marshal(eventlog.RollbackData{To: to, Label: c.label, Reason: c.reason})
	if err != nil {
		return 0, err
	}
	seq, err := w.AppendAt(ctx, next, eventlog.Event{Type: eventlog.TypeRollback, Time: c.now().UnixMilli(), Data: raw})
	if err != nil {
		return 0, err
	}
	return seq, w.Flush(ctx)
}

// RollbackTo rolls back to the latest checkpoint labelled label on the live
// branch (docs/format.md §7: to = its seq).
func RollbackTo(ctx context.Context, w interface {
	Writer
	Reader
}, label string, opts ...Option) (int64, error) {
	cp, err := Find(ctx, w, label)
	if err != nil {
		return 0, err
	}
	return Rollback(ctx, w, cp.Seq, append([]Option{WithLabel(label)}, opts...)...)
}

// List returns the log's checkpoints in seq order, each marked Live when it
// is on the live branch at the end of the log.
func List(ctx context.Context, r Reader) ([]Info, error) {
	var infos []Info
	var prevLive []int // per checkpoint: the live checkpoint before it
	// heads[k]: index of the latest live checkpoint in the state after
	// event k, or -1. A rollback's head is its target's.
	var heads []int32
	for e, err := range r.Read(ctx, 0, 1<<62) {
		if err != nil {
			return nil, err
		}
		if e.Seq != int64(len(heads)) {
			return nil, fmt.Errorf("checkpoint: the log skips from seq %d to %d", len(heads)-1, e.Seq)
		}
		head := int32(-1)
		if len(heads) > 0 {
			head = heads[len(heads)-1]
		}
		switch e.Type {
		case eventlog.TypeCheckpoint:
			r, err := eventlog.ParseReserved(e)
			if err != nil {
				return nil, err
			}
			cp := r.Checkpoint
			infos = append(infos, Info{Seq: e.Seq, Time: e.Time, Label: cp.Label, Log: cp.Log, State: cp.State})
			prevLive = append(prevLive, int(head))
			head = int32(len(infos) - 1)
		case eventlog.TypeRollback:
			r, err := eventlog.ParseReserved(e)
			if err != nil {
				return nil, err
			}
			head = heads[r.Rollback.To]
		}
		heads = append(heads, head)
	}
	if len(heads) > 0 {
		for i := int(heads[len(heads)-1]); i >= 0; i = prevLive[i] {
			infos[i].Live = true
		}
	}
	return infos, nil
}

// Find returns the latest checkpoint labelled label on the live branch.
func Find(ctx context.Context, r Reader, label string) (Info, error) {
	infos, err := List(ctx, r)
	if err != nil {
		return Info{}, err
	}
	for i := len(infos) - 1; i >= 0; i-- {
		if infos[i].Live && infos[i].Label == label {
			return infos[i], nil
		}
	}
	return Info{}, fmt.Errorf("%w: %q", ErrNoCheckpoint, label)
}

// Last returns the log's last checkpoint (the last one wins, on the live
// branch or not); ok is false when there is none.
func Last(ctx context.Context, r Reader) (info Info, ok bool, err error) {
	infos, err := List(ctx, r)
	if err != nil || len(infos) == 0 {
		return Info{}, false, err
	}
	return infos[len(infos)-1], true, nil
}

// Verify recomputes every digest of the log: each checkpoint's log digest
// and, for a projection it knows at that version (one of known), its state
// digest; a state of a projection not in known is counted as unchecked. It
// replays only the projections of known that some checkpoint names: a
// first pass reads the checkpoints (no projection applied), so a log whose
// checkpoints name agent/v1 alone never pays for a transcript replay, nor
// holds its state in memory. Corruption, a lineage error or a digest
// mismatch is returned as an error (a *replay.DigestError for a digest).
func Verify(ctx context.Context, src replay.Source, known ...projection.Projection) (replay.Result, error) {
	return VerifyEach(ctx, src, nil, known...)
}

// VerifyEach is Verify that also shows each event of the log, in order,
// to each (when not nil) during its first pass, so a verifier that wants
// more of every event reads the log no more often.
func VerifyEach(ctx context.Context, src replay.Source, each func(eventlog.Event), known ...projection.Projection) (replay.Result, error) {
	named, err := namedStates(ctx, src, each)
	if err != nil {
		return replay.Result{}, err
	}
	var ps []projection.Projection
	for _, p := range known {
		if named[projection.ID(p)] {
			ps = append(ps, p)
		}
	}
	return replay.Replay(ctx, src, ps, replay.CheckDigests())
}

// namedStates returns the projection IDs the log's checkpoints name a state
// of, on the live branch or not.
func namedStates(ctx context.Context, src replay.Source, each func(eventlog.Event)) (map[string]bool, error) {
	named := map[string]bool{}
	for e, err := range src.Read(ctx, 0, src.Seq()) {
		if err != nil {
			return nil, err
		}
		if each != nil {
			each(e)
		}
		if e.Type != eventlog.TypeCheckpoint {
			continue
		}
		if r, err := eventlog.ParseReserved(e); err == nil && r.Checkpoint.State != nil {
			named[r.Checkpoint.State.Projection] = true
		}
		// A checkpoint that does not parse is the replay's to report.
	}
	return named, nil
}
