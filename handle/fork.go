package handle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ErrHasDependents: Delete of a session that forks depend on, without
// Detach or Cascade; wrapped by *DependentsError.
var ErrHasDependents = errors.New("handle: other sessions fork from this one")

// DependentsError lists the forks that depend on a session.
type DependentsError struct {
	ID         string
	Dependents []string
	// Op is what was refused ("" for delete); Fix what would let it run
	// ("" for delete's: detach them or cascade).
	Op, Fix string
}

// Error implements error.
func (e *DependentsError) Error() string {
	op, fix := cmp.Or(e.Op, "delete"), cmp.Or(e.Fix, "detach them or cascade")
	return fmt.Sprintf("handle: cannot %s %s: %d fork(s) depend on it (%s); %s",
		op, e.ID, len(e.Dependents), strings.Join(e.Dependents, ", "), fix)
}

// Unwrap returns ErrHasDependents.
func (e *DependentsError) Unwrap() error { return ErrHasDependents }

// Fork creates a session whose logical log is session id's events 0..at
// followed by its own, which start at seq at+1. Nothing is copied: the
// cost does not depend on the parent's length. The fork is durable when
// Fork returns; a write handle on it is returned. Forking a fork works,
// and so does forking at a seq inside an abandoned branch. The parent
// must hold event at (ErrLineage otherwise).
func (s *FileStore) Fork(ctx context.Context, id string, at int64, opts ...CreateOption) (Handle, error) {
	info, err := s.Stat(ctx, id)
	if err != nil {
		return nil, err
	}
	if opts, err = ForkOptions(info, at, opts); err != nil {
		return nil, err
	}
	return s.Create(ctx, opts...)
}

// deleteConfig holds what DeleteOptions set.
type deleteConfig struct{ detach, cascade bool }

// DeleteOption changes what Delete does with the forks that depend on the
// session.
type DeleteOption func(*deleteConfig)

// Detach makes Delete write the inherited prefix into every fork that
// depends on the session (atomically, each under its writer lock), so that
// they stand alone, before deleting it.
func Detach() DeleteOption { return func(c *deleteConfig) { c.detach = true } }

// Cascade makes Delete delete the forks that depend on the session (and
// theirs), before deleting it.
func Cascade() DeleteOption { return func(c *deleteConfig) { c.cascade = true } }

// dependents returns the forks whose parent is id. Children (mode child)
// do not depend on their parent.
func (s *FileStore) dependents(ctx context.Context, id string) ([]string, error) {
	hdrs, err := s.headers(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hdrs {
		if p := h.hdr.Parent; p != nil && p.ID == id && p.Mode == eventlog.ModeFork {
			out = append(out, h.hdr.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Detach makes the fork id stand alone: its file is rewritten (temp file,
// fsync, rename, fsync folder, under its writer lock) to hold its whole
// logical log, the inherited prefix included, with no parent. Its logical
// log, and so every digest, is unchanged.
func (s *FileStore) Detach(ctx context.Context, id string) error {
	if _, err := s.existing(ctx, id); err != nil {
		return err
	}
	lock, err := lockFile(s.fs, s.lockPath(id))
	if err != nil {
		return err
	}
	defer lock.unlock()
	h, err := s.open(ctx, id, 0, nil, OpenParams{})
	if err != nil {
		return err
	}
	defer h.Close()
	hdr := h.Header()
	if hdr.Parent == nil || hdr.Parent.Mode != eventlog.ModeFork {
		return nil // stands alone already
	}
	hdr.Parent = nil
	loc, err := s.locate(ctx, id)
	if err != nil {
		return err
	}
	plan, err := s.rewritePlan(ctx, loc, hdr, loc.enc)
	if err != nil {
		return err
	}
	if err := s.rewrite(ctx, id, loc, loc.enc, hdr, plan, h.Read(ctx, 0, End)); err != nil {
		return err
	}
	s.dropDerived(id)
	return nil
}

// holdsWords says what a log whose last seq is last holds, for messages:
// "holds no events" rather than "0..-1".
func holdsWords(last int64) string {
	switch {
	case last < 0:
		return "holds no events"
	case last == 0:
		return "holds only seq 0"
	}
	return fmt.Sprintf("holds seqs 0 to %d", last)
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
