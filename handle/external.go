package handle

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sessionlog/sessionlog/eventlog"
)

// This file is what a Store implemented outside this package (the
// JetStream store in handle/jetstream, say) needs so that it behaves as the
// file store does: the options' values and the checks every append makes.

// CheckID returns an error wrapping ErrInvalidID unless id is an
// upper-case ULID.
func CheckID(id string) error { return checkID(id) }

// CreateParams is what a list of CreateOptions says.
type CreateParams struct {
	ID        string // set when IDSet
	IDSet     bool
	CreatedAt *int64 // nil: now
	Labels    map[string]string
	Parent    *eventlog.Parent
	Encoding  string // "" unless WithSessionEncoding was given
}

// ResolveCreate applies CreateOptions.
func ResolveCreate(opts ...CreateOption) CreateParams {
	var c createConfig
	for _, o := range opts {
		o(&c)
	}
	return CreateParams{ID: c.id, IDSet: c.idSet, CreatedAt: c.createdAt, Labels: maps.Clone(c.labels),
		Parent: c.parent, Encoding: c.encoding}
}

// ListParams is what a list of ListOptions says.
type ListParams struct {
	cfg listConfig
}

// ResolveList applies ListOptions.
func ResolveList(opts ...ListOption) ListParams {
	var p ListParams
	for _, o := range opts {
		o(&p.cfg)
	}
	return p
}

// Match reports whether a session with this header passes the filters.
func (p ListParams) Match(h eventlog.Header) bool { return p.cfg.match(h) }

// Broken returns the SkipBroken callback, or nil when List must fail on a
// session it cannot describe.
func (p ListParams) Broken() func(id string, err error) { return p.cfg.broken }

// DeleteParams is what a list of DeleteOptions says.
type DeleteParams struct {
	Detach, Cascade bool
}

// ResolveDelete applies DeleteOptions.
func ResolveDelete(opts ...DeleteOption) DeleteParams {
	var c deleteConfig
	for _, o := range opts {
		o(&c)
	}
	return DeleteParams{Detach: c.detach, Cascade: c.cascade}
}

// PrepareBatch checks every event of a batch appended to the log at path
// (a refused event gives an *EventError naming its index) and returns
// copies whose data are compacted and owned by the caller, and whether the
// batch holds a checkpoint.
func PrepareBatch(path string, events []eventlog.Event) (batch []eventlog.Event, hasCheckpoint bool, err error) {
	batch = make([]eventlog.Event, len(events))
	if hasCheckpoint, err = prepareBatch(path, events, batch); err != nil {
		return nil, false, err
	}
	return batch, hasCheckpoint, nil
}

// CheckReservedBatch validates the reserved events of a batch whose seqs
// are assigned (docs/format.md §Events the library understands): a rollback's "to" below its own seq, a
// checkpoint's log digest equal to dig, the digest of everything before
// it. It returns the digest to keep after the batch (nil when dig is nil:
// the caller then checks checkpoints once its digest is known). dig is not
// modified when the batch holds a checkpoint.
func CheckReservedBatch(path string, batch []eventlog.Event, dig *eventlog.Digest, hasCheckpoint bool) (*eventlog.Digest, error) {
	return checkReserved(path, batch, dig, hasCheckpoint)
}

// RangeReader reads a session's logical log from..to into yield, at a
// depth of forks, and returns false when it stopped early (yield said so,
// or it yielded an error): what a handle's Read does.
type RangeReader func(ctx context.Context, from, to int64, depth int, yield func(eventlog.Event, error) bool) bool

// ReadLogical is what every store's Read does around its own rows: it
// yields the logical log's events from..to — a fork's inherited ones first,
// through readParent, then own(from, to) for the rest — after checking
// usable (a closed or poisoned handle's error is yielded). It returns false
// when it stopped early (yield said so, or it yielded an error).
func ReadLogical(ctx context.Context, hdr eventlog.Header, from, to int64, depth int, usable func() error,
	readParent func(ctx context.Context, p eventlog.Parent, from, upto int64, depth int, yield func(eventlog.Event, error) bool) bool,
	own func(from, to int64) bool, yield func(eventlog.Event, error) bool) bool {
	if from > to {
		return true
	}
	if err := usable(); err != nil {
		yield(eventlog.Event{}, err)
		return false
	}
	if p := hdr.Parent; p != nil && p.Mode == eventlog.ModeFork && from <= p.Seq {
		if !readParent(ctx, *p, from, min(to, p.Seq), depth, yield) {
			return false
		}
		from = p.Seq + 1
	}
	if from > to {
		return true
	}
	return own(from, to)
}

// ReadInherited yields a fork's inherited events from..upto, read by the
// parent's RangeReader (opened by parent on need), and checks that the
// parent holds them all; path names the fork in errors. It returns false
// when it stopped early.
func ReadInherited(ctx context.Context, path string, p eventlog.Parent, from, upto int64, depth int,
	parent func(context.Context) (RangeReader, error), yield func(eventlog.Event, error) bool) bool {
	if depth >= maxForkDepth {
		yield(eventlog.Event{}, &LineageError{Path: path, Parent: p.ID, Seq: p.Seq,
			Reason: fmt.Sprintf("more than %d forks in a chain (a cycle?)", maxForkDepth)})
		return false
	}
	read, err := parent(ctx)
	if err != nil {
		yield(eventlog.Event{}, err)
		return false
	}
	next := from
	ok := read(ctx, from, upto, depth+1, func(e eventlog.Event, err error) bool {
		if err == nil {
			next = e.Seq + 1
		}
		return yield(e, err)
	})
	if !ok {
		return false
	}
	if next != upto+1 {
		yield(eventlog.Event{}, &LineageError{Path: path, Parent: p.ID, Seq: p.Seq,
			Reason: fmt.Sprintf("the parent's log ends before seq %d", upto)})
		return false
	}
	return true
}

// YieldRows yields r's events up to seq to, checking ctx every 256; when
// r ended without error it calls ended with r's next seq, then yields the
// events of mem (appended, not yet stored: copies) from..to. It returns
// false when it stopped early.
func YieldRows(ctx context.Context, r *eventlog.Reader, ended func(next int64), mem []eventlog.Event, from, to int64,
	yield func(eventlog.Event, error) bool) bool {
	for n := 0; r.Next(); n++ {
		if n%256 == 0 && ctx.Err() != nil {
			yield(eventlog.Event{}, ctx.Err())
			return false
		}
		e := r.Event()
		if e.Seq > to {
			return true
		}
		if !yield(e, nil) {
			return false
		}
	}
	if err := r.Err(); err != nil {
		yield(eventlog.Event{}, err)
		return false
	}
	ended(r.NextSeq())
	for _, e := range mem {
		if e.Seq < from {
			continue
		}
		if e.Seq > to {
			return true
		}
		e.Data = slices.Clone(e.Data)
		if !yield(e, nil) {
			return false
		}
	}
	return true
}

// ForkOptions returns opts for the Create of a fork of the session info
// describes at seq at: ErrLineage unless the session holds event at.
func ForkOptions(info Info, at int64, opts []CreateOption) ([]CreateOption, error) {
	if at < 0 || at > info.LastSeq {
		return nil, fmt.Errorf("%w: cannot fork %s at seq %d: it %s", ErrLineage, info.ID, at, holdsWords(info.LastSeq))
	}
	return append(slices.Clone(opts), WithParent(eventlog.Parent{ID: info.ID, Seq: at, Mode: eventlog.ModeFork})), nil
}

// HandleDependents does what dp says with the forks deps of session id
// before it is deleted: delete them (cascade) or detach them, or refuse
// with a *DependentsError.
func HandleDependents(id string, deps []string, dp DeleteParams, cascade, detach func(dep string) error) error {
	for _, dep := range deps {
		var err error
		switch {
		case dp.Cascade:
			err = cascade(dep)
		case dp.Detach:
			err = detach(dep)
		default:
			return &DependentsError{ID: id, Dependents: deps}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
